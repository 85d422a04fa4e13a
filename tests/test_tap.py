"""
The twistd plugin's options and the service tree they wire.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import trustme
from twisted.internet.task import LoopingCall
from twisted.internet.testing import MemoryReactorClock
from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase

from reviewsd.config import base_url_for
from reviewsd.data.loading import DEMO_DATA
from reviewsd.insights import MEMO_VERSION
from reviewsd.publishing.service import ReviewsData
from reviewsd.tap import Options, makeService
from reviewsd.websub import Hub
from tests.support import MemoryReactorWithThreads, review, write_data


class Parsing(SynchronousTestCase):
    """Options as the command line gives them."""

    def parse(self, *argv: str) -> Options:
        options = Options()
        options.parseOptions(list(argv))
        return options

    def error(self, *argv: str) -> str:
        return str(self.assertRaises(usage.UsageError, self.parse, *argv))

    def options(self, *argv: str) -> Options:
        """Parsed, with a state directory of the test's own."""
        return self.parse("--state-dir", self.mktemp(), *argv)


class OptionsTests(Parsing):
    def setUp(self) -> None:
        self.state = Path(self.mktemp())
        environ = dict(os.environ, STATE_DIRECTORY=str(self.state))
        self.patch(os, "environ", environ)

    def test_defaults(self) -> None:
        options = self.parse()
        self.assertEqual(options["listen"], "tcp:8080:interface=127.0.0.1")
        self.assertEqual(options["base-url"], "http://127.0.0.1:8080")
        self.assertEqual(options["data"], DEMO_DATA)
        self.assertEqual(options["state-dir"], self.state)

    def test_state_dir_without_systemd(self) -> None:
        del os.environ["STATE_DIRECTORY"]
        os.environ["XDG_STATE_HOME"] = "/var/tmp/xdg"
        self.assertEqual(self.parse()["state-dir"], Path("/var/tmp/xdg/reviewsd"))

    def test_everything_given(self) -> None:
        data = str(write_data(Path(self.mktemp())))
        options = self.parse(
            "--listen",
            "tcp:9000:interface=0.0.0.0",
            "--base-url",
            "https://reviews.example.com/acme/",
            "--data",
            data,
            "--state-dir",
            "/var/lib/reviewsd",
        )
        self.assertEqual(options["listen"], "tcp:9000:interface=0.0.0.0")
        self.assertEqual(options["base-url"], "https://reviews.example.com/acme")
        self.assertEqual(options["data"], Path(data))
        self.assertEqual(options["state-dir"], Path("/var/lib/reviewsd"))

    def test_base_url_derived_from_listen(self) -> None:
        for listen, expected in [
            ("tcp:8080", "http://localhost:8080"),
            ("tcp:port=8081:interface=127.0.0.1", "http://127.0.0.1:8081"),
            ("tcp:80:interface=0.0.0.0", "http://localhost"),
            ("tcp6:8080:interface=\\:\\:1", "http://[::1]:8080"),
            ("ssl:443:interface=192.0.2.7:privateKey=k.pem", "https://192.0.2.7"),
            ("ssl:8443:privateKey=k.pem", "https://localhost:8443"),
        ]:
            self.assertEqual(base_url_for(listen), expected, listen)
        for listen in (
            "unix:/run/reviewsd.sock",
            "systemd:domain=INET:name=web",
            "tcp:0",
        ):
            self.assertRaises(usage.UsageError, base_url_for, listen)

    def test_bad_values(self) -> None:
        self.assertIn(
            "--listen 'bogus:1': Unknown endpoint type",
            self.error("--listen", "bogus:1"),
        )
        self.assertIn("--listen 'tcp:http'", self.error("--listen", "tcp:http"))
        self.assertIn(
            "--base-url is needed", self.error("--listen", "unix:/tmp/x.sock")
        )
        for url in (
            "ftp://x.example",
            "example.com",
            "https://x.example/?a=1",
            "https://u@x.example",
        ):
            self.assertIn(f"--base-url {url!r}", self.error("--base-url", url))
        self.assertIn(
            "--data '/nonexistent': no such directory",
            self.error("--data", "/nonexistent"),
        )
        self.assertIn("option --nope not recognized", self.error("--nope"))

    def test_usage_error_is_short(self) -> None:
        """
        After a bad value twistd prints the usage text and the error: the
        usage text is one pointer to --help, not the whole option list.
        """
        options = Options()
        self.assertIn("--listen", options.getUsage())
        self.assertRaises(usage.UsageError, options.parseOptions, ["--listen", "x:1"])
        self.assertEqual(
            options.getUsage(), "Run 'twistd reviewsd --help' for the list of options."
        )

    def write_config(self, text: str) -> Path:
        path = Path(self.mktemp())
        path.mkdir()
        config = path / "reviewsd.toml"
        config.write_text(text)
        return config

    def test_config_file(self) -> None:
        """TOML keys named like the long options; relative paths from the file."""
        config = self.write_config(
            'listen = "tcp:9001:interface=127.0.0.1"\n'
            'base-url = "https://r.example"\n'
            'data = "data"\n'
        )
        write_data(config.parent / "data")
        options = self.parse("--config", str(config))
        self.assertEqual(options["listen"], "tcp:9001:interface=127.0.0.1")
        self.assertEqual(options["base-url"], "https://r.example")
        self.assertEqual(options["data"], config.parent / "data")

    def test_example_config_documents_every_option(self) -> None:
        """etc/reviewsd.toml names every option, and its values parse."""
        example = Path(__file__).parent.parent / "etc" / "reviewsd.toml"
        keys = re.findall(r"^# ([a-z-]+) = ", example.read_text(), re.MULTILINE)
        options = [name for name, *_ in Options.optParameters if name != "config"]
        options += [name for name, *_ in Options.optFlags]
        self.assertEqual(sorted(keys), sorted([*options, *Options._repeatable]))
        enabled = re.sub(
            r"^# ([a-z-]+ = )", r"\1", example.read_text(), flags=re.MULTILINE
        )
        ca = os.path.abspath(self.mktemp())
        trustme.CA().cert_pem.write_to_path(ca)
        enabled = enabled.replace("/srv/reviewsd/data", str(DEMO_DATA))
        config = self.write_config(enabled.replace("/etc/reviewsd/callback-ca.pem", ca))
        options_ = self.parse("--config", str(config))
        self.assertEqual(options_["base-url"], "https://reviews.example.com")
        self.assertEqual(options_["mcp-allowed-origin"], ["https://app.example"])
        self.assertEqual(options_["lease-max"], 2592000)
        self.assertIs(options_["allow-private-callbacks"], False)
        self.assertTrue(options_["callback-ca"].startswith(b"-----BEGIN CERTIFICATE"))

    def test_repeated_origins(self) -> None:
        options = self.parse(
            "--mcp-allowed-origin",
            "https://a.example",
            "--mcp-allowed-origin",
            "*",
        )
        self.assertEqual(options["mcp-allowed-origin"], ["https://a.example", "*"])
        config = self.write_config('mcp-allowed-origin = "https://b.example"\n')
        self.assertEqual(
            self.parse("--config", str(config))["mcp-allowed-origin"],
            ["https://b.example"],
        )
        for bad in ("app.example", "https://a.example/path", "ftp://a.example"):
            self.assertIn(
                f"--mcp-allowed-origin {bad!r}", self.error("--mcp-allowed-origin", bad)
            )
        config.write_text("mcp-allowed-origin = [1]\n")
        self.assertIn("must be a string or a list", self.error("--config", str(config)))

    def test_websub_options(self) -> None:
        options = self.parse("--lease-min", "60", "--retry-base", "0.5")
        self.assertEqual((options["lease-min"], options["retry-base"]), (60, 0.5))
        self.assertEqual(options["lease-default"], 864000)
        for argv, expected in [
            (["--lease-min", "soon"], "--lease-min 'soon': must be a whole number"),
            (["--lease-max", "0"], "must be a whole number above 0"),
            (["--retry-base", "-1"], "--retry-base"),
            (["--lease-min", "900000"], "need --lease-min (900000) <= --lease-default"),
            (["--callback-ca", "/nonexistent.pem"], "--callback-ca '/nonexistent.pem'"),
        ]:
            self.assertIn(expected, self.error(*argv))
        not_pem = self.mktemp()
        Path(not_pem).write_text("hello")
        self.assertIn("no PEM certificate", self.error("--callback-ca", not_pem))
        config = self.write_config("lease-min = 1.5\nallow-private-callbacks = true\n")
        self.assertIn("--lease-min", self.error("--config", str(config)))
        config.write_text("retry-base = 2.5\nallow-private-callbacks = true\n")
        options = self.parse("--config", str(config))
        self.assertEqual(options["retry-base"], 2.5)
        self.assertIs(options["allow-private-callbacks"], True)
        config.write_text('allow-private-callbacks = "yes"\n')
        self.assertIn("must be true or false", self.error("--config", str(config)))

    def test_subscription_caps(self) -> None:
        options = self.parse()
        self.assertEqual(
            (options["max-subscriptions-per-host"], options["max-subscriptions"]),
            (100, 10000),
        )
        options = self.parse("--max-subscriptions", "50")
        self.assertEqual(options["max-subscriptions"], 50)
        self.assertIn(
            "--max-subscriptions '0': must be a whole number above 0",
            self.error("--max-subscriptions", "0"),
        )
        config = self.write_config("max-subscriptions = 20\n")
        self.assertEqual(self.parse("--config", str(config))["max-subscriptions"], 20)
        config.write_text('max-subscriptions = "many"\n')
        self.assertIn("--max-subscriptions", self.error("--config", str(config)))

    def test_command_line_wins(self) -> None:
        config = self.write_config(
            'listen = "tcp:9001"\nbase-url = "https://r.example"\n'
        )
        options = self.parse("--listen", "tcp:9002", "--config", str(config))
        self.assertEqual(options["listen"], "tcp:9002")
        self.assertEqual(options["base-url"], "https://r.example")

    def test_config_errors(self) -> None:
        config = self.write_config('base_url = "https://r.example"\n')
        message = self.error("--config", str(config))
        self.assertIn(f"--config {config}: unknown key 'base_url'", message)
        self.assertIn("did you mean 'base-url'?", message)
        config.write_text("listen = 8080\n")
        self.assertIn(
            "key 'listen' must be a string, got int",
            self.error("--config", str(config)),
        )
        config.write_text('listen = "tcp:8080\n')
        self.assertIn("invalid TOML", self.error("--config", str(config)))
        self.assertIn("line 1", self.error("--config", str(config)))
        config.write_text('config = "other.toml"\n')
        self.assertIn("unknown key 'config'", self.error("--config", str(config)))
        self.assertIn("No such file", self.error("--config", str(config) + ".missing"))
        config.write_text('listen = "nonsense:1"\n')
        self.assertIn("--listen 'nonsense:1'", self.error("--config", str(config)))


class MakeServiceTests(Parsing):
    def test_listens_where_told(self) -> None:
        """
        It listens where told, serving the data; the word index follows
        once it serves, in a worker thread.
        """
        reactor = MemoryReactorWithThreads()
        service = makeService(
            self.options("--listen", "tcp:8123:interface=127.0.0.1"), reactor
        )
        [data] = [child for child in service if isinstance(child, ReviewsData)]
        snapshot = data.snapshot
        self.assertFalse(snapshot.index.has_words)
        service.privilegedStartService()
        service.startService()
        self.addCleanup(service.stopService)
        [(port, factory, _, interface)] = reactor.tcpServers
        self.assertEqual((port, interface), (8123, "127.0.0.1"))
        self.assertIs(factory.resource._source.snapshot, snapshot)
        self.assertEqual(snapshot.dataset.business.name, "Thimbleberry Home Services")
        self.assertTrue(snapshot.index.has_words)

    def test_hub_settings(self) -> None:
        """The subscription caps reach the hub."""
        service = makeService(
            self.options(
                "--max-subscriptions-per-host", "7", "--max-subscriptions", "70"
            ),
            MemoryReactorWithThreads(),
        )
        [hub] = [child for child in service if isinstance(child, Hub)]
        self.assertEqual(
            (hub.config.max_per_host, hub.config.max_subscriptions), (7, 70)
        )

    def test_state_dir_created(self) -> None:
        options = self.options()
        makeService(options, MemoryReactorClock())
        self.assertTrue(options["state-dir"].is_dir())

    def test_start_keeps_memos(self) -> None:
        """
        Once the daemon serves, the insights cache in the state directory
        is saved with each review's memo, of this release's version, so
        that the next start reads them.
        """
        options = self.options()
        service = makeService(options, MemoryReactorWithThreads())
        cache = options["state-dir"] / "insights-cache.sqlite3"
        self.assertFalse(cache.exists())
        service.privilegedStartService()
        service.startService()
        self.addCleanup(service.stopService)
        connection = sqlite3.connect(cache)
        self.addCleanup(connection.close)
        [(version,)] = connection.execute("SELECT value FROM meta WHERE key = 'memos'")
        [(rows, memos)] = connection.execute(
            "SELECT count(*), count(memo) FROM reviews"
        )
        self.assertEqual(version, MEMO_VERSION)
        self.assertEqual(memos, rows)
        self.assertGreater(rows, 0)

    def test_bad_data_stops_start_up(self) -> None:
        """One line naming file, record and field; nothing listens."""
        data = write_data(
            Path(self.mktemp()), [review(1), review(2, date="2023-02-29")]
        )
        reactor = MemoryReactorClock()
        error = self.assertRaises(
            SystemExit, makeService, self.options("--data", str(data)), reactor
        )
        self.assertEqual(
            str(error),
            f"reviewsd: cannot publish the data: {data / 'reviews.json'}: record [1] "
            "(id 'r0002'): field 'date': '2023-02-29' is not a calendar date",
        )
        self.assertEqual(reactor.tcpServers, [])


class OperationsOptionsTests(Parsing):
    def setUp(self) -> None:
        environ = dict(os.environ, STATE_DIRECTORY=self.mktemp())
        self.patch(os, "environ", environ)

    def config(self, text: str) -> str:
        path = Path(self.mktemp())
        path.write_text(text)
        return str(path)

    def test_defaults(self) -> None:
        options = self.parse()
        self.assertIs(options["access-log"], True)
        self.assertIsNone(options["metrics-listen"])
        self.assertEqual(
            (
                options["idle-timeout"],
                options["receive-timeout"],
                options["shutdown-timeout"],
            ),
            (60.0, 30.0, 10.0),
        )
        self.assertEqual(
            options["analysis-processes"], min(len(os.sched_getaffinity(0)), 4)
        )

    def test_given(self) -> None:
        options = self.parse(
            "--access-log",
            "off",
            "--metrics-listen",
            "tcp:9464:interface=127.0.0.1",
            "--shutdown-timeout",
            "2.5",
            "--analysis-processes",
            "1",
        )
        self.assertEqual(options["analysis-processes"], 1)
        self.assertIs(options["access-log"], False)
        self.assertEqual(options["metrics-listen"], "tcp:9464:interface=127.0.0.1")
        self.assertEqual(options["shutdown-timeout"], 2.5)
        config = self.config("access-log = false\nidle-timeout = 5\n")
        options = self.parse("--config", config)
        self.assertIs(options["access-log"], False)
        self.assertEqual(options["idle-timeout"], 5.0)
        self.assertIs(
            self.parse("--config", config, "--access-log", "on")["access-log"], True
        )

    def test_errors_name_the_option(self) -> None:
        for argv, expected in [
            (["--access-log", "maybe"], "--access-log 'maybe': must be on or off"),
            (["--metrics-listen", "bogus:1"], "--metrics-listen 'bogus:1'"),
            (
                ["--shutdown-timeout", "0"],
                "--shutdown-timeout '0': must be a number above 0",
            ),
            (
                ["--receive-timeout", "soon"],
                "--receive-timeout 'soon': must be a number",
            ),
            (
                ["--analysis-processes", "1.5"],
                "--analysis-processes '1.5': must be a whole number",
            ),
        ]:
            self.assertIn(expected, self.error(*argv))
        config = self.config('access-log = "off"\n')
        self.assertIn(
            "key 'access-log' must be true or false", self.error("--config", config)
        )
        config = self.config("idle-timeout = -1\n")
        self.assertIn(
            "--idle-timeout -1: must be a number above 0",
            self.error("--config", config),
        )
        config = self.config("acess-log = true\n")
        self.assertIn("did you mean 'access-log'?", self.error("--config", config))


class OperationsWiringTests(Parsing):
    def start(self, options: Options) -> MemoryReactorClock:
        reactor = MemoryReactorWithThreads()
        service = makeService(options, reactor)
        service.privilegedStartService()
        service.startService()
        self.addCleanup(service.stopService)
        return reactor

    def test_configuration_logged_once_without_secrets(self) -> None:
        ca = os.path.abspath(self.mktemp())
        trustme.CA().cert_pem.write_to_path(ca)
        events: list[dict[str, object]] = []
        from twisted.logger import globalLogPublisher

        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        options = self.options("--callback-ca", ca, "--access-log", "off")
        makeService(options, MemoryReactorClock())
        [event] = [e for e in events if "configuration" in e]
        configuration = event["configuration"]
        assert isinstance(configuration, dict)
        self.assertEqual(configuration["callback-ca"], ca)
        self.assertIs(configuration["access-log"], False)
        self.assertEqual(configuration["listen"], "tcp:8080:interface=127.0.0.1")
        self.assertEqual(
            sorted(configuration),
            sorted(
                [name for name, *_ in Options.optParameters]
                + [name for name, *_ in Options.optFlags]
                + list(Options._repeatable)
            ),
        )
        self.assertNotIn("BEGIN CERTIFICATE", repr(event))

    def test_metrics_on_the_main_listener(self) -> None:
        reactor = self.start(self.options("--listen", "tcp:8123:interface=127.0.0.1"))
        [(_, site, _, _)] = reactor.tcpServers
        self.assertIn("/metrics", site.resource._resources)
        self.assertIn("/healthz", site.resource._resources)
        self.assertEqual(len(site.observers), 2)  # metrics and the access log
        self.assertEqual(site.timeOut, 60.0)

    def test_metrics_on_their_own_listener(self) -> None:
        reactor = self.start(
            self.options(
                "--listen",
                "tcp:8123:interface=127.0.0.1",
                "--metrics-listen",
                "tcp:9464:interface=127.0.0.1",
                "--access-log",
                "off",
                "--idle-timeout",
                "5",
            )
        )
        main, side = reactor.tcpServers
        self.assertEqual((main[0], side[0]), (8123, 9464))
        self.assertNotIn("/metrics", main[1].resource._resources)
        self.assertEqual(sorted(side[1].resource._resources), ["/healthz", "/metrics"])
        self.assertEqual(len(main[1].observers), 1)  # metrics only
        self.assertEqual(main[1].timeOut, 5.0)

    def test_timers_run_on_the_given_reactor(self) -> None:
        """
        Sessions expire every minute; each site drops slow clients every
        second; quiet MCP event streams are kept alive every 20 seconds.
        """
        reactor = self.start(
            self.options("--metrics-listen", "tcp:9464:interface=127.0.0.1")
        )
        timers = sorted(
            (call.getTime(), call.func.f.__name__)
            for call in reactor.getDelayedCalls()
            if isinstance(call.func, LoopingCall)
        )
        self.assertEqual(
            timers,
            [
                (1.0, "drop_slow_clients"),
                (1.0, "drop_slow_clients"),
                (20.0, "keep_alive"),
                (60.0, "expire"),
            ],
        )
