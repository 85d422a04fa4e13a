"""
HTTPS on loopback: a throwaway certificate authority (trustme) and a server
listening with a certificate it issued.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trustme
from twisted.internet import reactor
from twisted.internet.ssl import PrivateCertificate
from twisted.web.resource import Resource
from twisted.web.server import Site


class TLSFiles:
    """A throwaway CA and a certificate for loopback names, on disk too."""

    def __init__(self, directory: Path, *names: str) -> None:
        self.ca = trustme.CA()
        self.cert = self.ca.issue_cert(*(names or ("127.0.0.1", "localhost")))
        directory.mkdir(parents=True, exist_ok=True)
        self.ca_path = directory / "callback-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_path))

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert_pem.bytes()

    def server_options(self) -> Any:
        pem = self.cert.private_key_pem.bytes() + b"".join(
            c.bytes() for c in self.cert.cert_chain_pems
        )
        return PrivateCertificate.loadPEM(pem).options()


def listen_https(resource: Resource, tls: TLSFiles) -> Any:
    """Serve C{resource} over HTTPS on a free loopback port."""
    site = Site(resource)
    site.noisy = False
    return reactor.listenSSL(0, site, tls.server_options(), interface="127.0.0.1")
