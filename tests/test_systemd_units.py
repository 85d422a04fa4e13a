"""
The systemd units: what they hold, and that C{systemd-analyze verify}
accepts them (where the Debian C{systemd} package is installed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from twisted.trial.unittest import SkipTest, SynchronousTestCase

UNITS = Path(__file__).resolve().parent.parent / "systemd"


def directives(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


class UnitTests(SynchronousTestCase):
    def test_service(self) -> None:
        unit = directives(UNITS / "reviewsd.service")
        for key, value in [
            ("Type", "notify"),
            ("ExecReload", "/bin/kill -HUP $MAINPID"),
            ("StateDirectory", "reviewsd"),
            ("Restart", "on-failure"),
            ("ProtectSystem", "strict"),
            ("PrivateTmp", "true"),
            ("NoNewPrivileges", "true"),
            ("CapabilityBoundingSet", ""),
            ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
            ("MemoryDenyWriteExecute", "false"),
        ]:
            self.assertEqual(unit.get(key), [value], key)
        self.assertIn("@system-service", unit["SystemCallFilter"])
        [start] = unit["ExecStart"]
        self.assertRegex(
            start,
            r"/twistd --nodaemon --pidfile= --logger=reviewsd\.logs\.journal_observer "
            r"reviewsd --config /etc/reviewsd/reviewsd\.toml$",
        )
        self.assertNotEqual(unit["User"], ["root"])

    def test_socket(self) -> None:
        unit = directives(UNITS / "reviewsd.socket")
        self.assertEqual(unit["FileDescriptorName"], ["reviewsd-http"])
        self.assertEqual(unit["Service"], ["reviewsd.service"])
        self.assertIn(
            'listen = "systemd:domain=INET:name=reviewsd-http"',
            (UNITS / "reviewsd.socket").read_text(),
        )

    def test_systemd_analyze_verify(self) -> None:
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            raise SkipTest("systemd-analyze is not installed (Debian: systemd)")
        directory = Path(self.mktemp()).resolve()
        directory.mkdir()
        # verify checks that each command exists: stand in for the ones a
        # production host has and this one may not (/opt/reviewsd/bin/twistd)
        stand_in = directory / "command"
        stand_in.write_text("#!/bin/sh\n")
        stand_in.chmod(0o755)
        for name in ("reviewsd.service", "reviewsd.socket"):
            text = (UNITS / name).read_text()

            def replace(match: re.Match[str]) -> str:
                path = match.group(2)
                return match.group(1) + (
                    path if os.path.exists(path) else str(stand_in)
                )

            text = re.sub(r"^(Exec\w+=)(/\S+)", replace, text, flags=re.MULTILINE)
            (directory / name).write_text(text)
        result = subprocess.run(
            [analyze, "verify", "reviewsd.socket", "reviewsd.service"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=60,
        )
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        # unknown keys and bad values are warnings only: there must be none
        complaints = [line for line in output.splitlines() if "reviewsd." in line]
        self.assertEqual(complaints, [], output)
