"""Prometheus metrics of the service (issue 51, "Run as production runs it": requests, rejections by
reason, latency and database errors on a bind of their own, `serve --metrics-bind`). Real gunicorn
with two workers: the scraped counts are the sum of what every worker answered."""
import concurrent.futures
import shutil
import time
import urllib.request

import psycopg
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from postgres import free_port

#: How long the requests may take to reach both workers (the kernel hands connections to whichever
#: worker accepts first; a test waits for the condition, never for a number of seconds).
SPREAD_TIMEOUT = 120


def scrape(port: int) -> dict:
    """{(name, labels as a sorted tuple): value} of every sample at the metrics bind, and the
    families by name under None (parsed by prometheus_client's own text-format parser)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode("utf-8")
    families = list(text_string_to_metric_families(text))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    samples[None] = {f.name: f for f in families}
    return samples


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def nonces_answered_by(pid: int, directory, scratch) -> float:
    """The newNonce 200s one worker counted: its own file, summed alone."""
    own = scratch / str(pid)
    own.mkdir(exist_ok=True)
    for old in own.iterdir():
        old.unlink()
    source = directory / f"counter_{pid}.db"
    if not source.exists():
        return 0.0
    shutil.copy(source, own / source.name)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(own))
    return registry.get_sample_value("deviceid_verifier_requests_total",
                                     {"operation": "newNonce", "status": "200"}) or 0.0


def metrics_service(services, database, tmp_path, monkeypatch):
    """A service of two workers with --metrics-bind, its counting directory under tmp_path."""
    port = free_port()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    service = services(database, 1, workers=2, extra=["--metrics-bind", f"127.0.0.1:{port}"])[0]
    return service, port


def test_requests_across_two_workers_add_up_in_one_scrape(services, tmp_path, monkeypatch):
    service, port = metrics_service(services, f"sqlite:///{tmp_path}/ca.sqlite3", tmp_path, monkeypatch)
    master, *workers = service.processes()
    [directory] = tmp_path.glob("deviceid-metrics-*")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    sent = 0
    deadline = time.monotonic() + SPREAD_TIMEOUT
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        while not all(nonces_answered_by(pid, directory, scratch) for pid in workers):
            assert time.monotonic() < deadline, f"{sent} requests, and not both workers answered one"
            assert all(status == 200 for status, _, _ in pool.map(lambda _: service.post("/v1/nonce"), range(16)))
            sent += 16
    per_worker = [nonces_answered_by(pid, directory, scratch) for pid in workers]
    assert all(count > 0 for count in per_worker) and sum(per_worker) == sent, (per_worker, sent)

    samples = scrape(port)
    assert value(samples, "deviceid_verifier_requests_total", operation="newNonce", status="200") == sent
    assert value(samples, "deviceid_verifier_request_duration_seconds_count", operation="newNonce") == sent
    assert value(samples, "deviceid_verifier_request_duration_seconds_bucket", operation="newNonce", le="+Inf") == sent
    assert value(samples, "deviceid_verifier_request_duration_seconds_sum", operation="newNonce") > 0
    families = samples[None]
    assert (families["deviceid_verifier_requests"].type, families["deviceid_verifier_database_unavailable"].type,
            families["deviceid_verifier_request_duration_seconds"].type) == ("counter", "counter", "histogram")
    assert value(samples, "deviceid_verifier_database_unavailable_total") == 0
    buckets = [s for s in families["deviceid_verifier_request_duration_seconds"].samples
               if s.name.endswith("_bucket") and s.labels["operation"] == "newNonce"]
    counts = [s.value for s in sorted(buckets, key=lambda s: float(s.labels["le"]))]
    assert counts == sorted(counts) and counts[-1] == sent  # cumulative, ending at +Inf


def test_metrics_are_served_on_their_own_bind_only(services, tmp_path, monkeypatch):
    service, port = metrics_service(services, f"sqlite:///{tmp_path}/ca.sqlite3", tmp_path, monkeypatch)
    for path in ("/metrics", "/metrics/", "/v1/metrics"):
        status, _, body = service.get(path)
        assert status == 404, (path, status, body)
    # the metrics bind answers metrics and nothing of the devices' interface
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/nonce", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert b"deviceid.nonce" not in response.read()
    assert value(scrape(port), "deviceid_verifier_requests_total", operation="unknown", status="404") == 3


def test_rejections_are_counted_by_reason_and_database_faults_as_503s(services, postgresql, tmp_path, monkeypatch):
    url = postgresql.new_database()
    service, port = metrics_service(services, url, tmp_path, monkeypatch)
    assert service.post("/v1/enrolment/finish", {})[0] == 400  # no "v": version
    assert service.post("/v1/enrolment/finish", {"v": 1, "type": "deviceid.nonce"})[0] == 400  # message-type
    assert service.post("/v1/attestation/verify", b"{")[0] == 400  # malformed
    assert service.get("/v1/nonce")[0] == 405  # malformed: a wrong method

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        answers = [service.post("/v1/nonce") for _ in range(5)]
        admin.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = off")
    assert [status for status, _, _ in answers] == [503] * 5, answers

    samples = scrape(port)
    assert samples[None]["deviceid_verifier_rejections"].type == "counter"
    assert {reason: value(samples, "deviceid_verifier_rejections_total", reason=reason)
            for reason in ("version", "message-type", "malformed")} == {"version": 1, "message-type": 1,
                                                                        "malformed": 2}
    assert value(samples, "deviceid_verifier_requests_total", operation="enrolmentFinish", status="400") == 2
    assert value(samples, "deviceid_verifier_requests_total", operation="newNonce", status="405") == 1
    assert value(samples, "deviceid_verifier_requests_total", operation="newNonce", status="503") == 5
    assert value(samples, "deviceid_verifier_database_unavailable_total") == 5


def test_a_metrics_bind_in_use_is_a_usage_error(ca_files, ek_anchors, tmp_path):
    import socket
    from verifier_command import cli
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = cli("serve", "--database", f"sqlite:///{tmp_path}/ca.sqlite3", "--ca-key", ca_files[0],
                      "--ca-cert", ca_files[1], "--ek-anchor", ek_anchors[0], "--bind", f"127.0.0.1:{free_port()}",
                      "--metrics-bind", f"127.0.0.1:{port}")
    assert refused.returncode == 2, refused
    assert f"--metrics-bind 127.0.0.1:{port}: Address already in use" in refused.stderr


def test_the_metrics_hooks_follow_gunicorn_hooks_already_set(tmp_path, monkeypatch):
    """serve's other gunicorn hooks keep running, and gunicorn accepts the pairs (it checks arity)."""
    from gunicorn.config import Config
    from deviceid_verifier._service._metrics import Exporter
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)  # Exporter sets it; gone again after the test
    exporter = Exporter(f"127.0.0.1:{free_port()}")
    ran = []
    options = exporter.gunicorn_options({"workers": 2, "post_fork": lambda server, worker: ran.append(worker)})
    config = Config()
    for name, hook in options.items():
        config.set(name, hook)
    config.post_fork(None, "a worker")
    assert ran == ["a worker"] and exporter.server.socket.fileno() == -1  # theirs ran, then ours closed it
    config.on_exit(None)
    assert list(tmp_path.iterdir()) == []
