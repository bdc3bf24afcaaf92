"""Prometheus metrics of the service (`serve --metrics-bind HOST:PORT`), on a listener of their own,
never on the devices' bind. Each gunicorn worker counts its requests into files of a directory
the service makes for the run (prometheus_client's multiprocess mode); gunicorn's master process
answers scrapes from a thread, summing every worker's files, so the counts add up across
workers, and those of a worker that has exited stay counted.

    deviceid_verifier_requests_total{operation,status}    every answer: the operationId (unknown
                                                          for a path the service has not), HTTP status
    deviceid_verifier_rejections_total{reason}            every 4xx by its reason (REASONS)
    deviceid_verifier_request_duration_seconds{operation} a histogram, until the body is made
    deviceid_verifier_database_unavailable_total          every 503: the database did not answer

prometheus_client (Debian's python3-prometheus-client) chooses multiprocess mode when it is first
imported, from $PROMETHEUS_MULTIPROC_DIR, so this module imports it only once Exporter has set that."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple
from wsgiref.simple_server import WSGIRequestHandler

from .. import _inputs
from .._errors import REASONS
from ._openapi import openapi_document

StartResponse = Callable[..., Any]
WSGIApp = Callable[[Mapping[str, Any], StartResponse], Iterable[bytes]]

#: Latency buckets (seconds): a nonce takes under a millisecond, an enrolment an RSA decryption,
#: a CRL of 100,000 entries a good part of a second.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _operations() -> Dict[str, str]:
    """PATH_INFO → operationId, from the OpenAPI document (one owner of the names)."""
    names = {path: operation["operationId"]
             for path, methods in openapi_document()["paths"].items() for operation in methods.values()}
    names["/openapi.json"] = "openApiDocument"
    return names


def _address(bind: str) -> Tuple[str, int]:
    host, _, port = bind.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise _inputs.Failure(f"--metrics-bind {bind!r} is not HOST:PORT")
    return host, int(port)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not worth a log line each
        pass


class Exporter:
    """The metrics of one `serve`: made in gunicorn's master before any worker starts. It binds
    `bind` at once (a port in use is a usage error, exit 2), counts through wrap(app) in every
    worker, and answers scrapes once gunicorn_options' when_ready hook has run in the master."""

    def __init__(self, bind: str) -> None:
        host, port = _address(bind)
        self.directory = tempfile.mkdtemp(prefix="deviceid-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = self.directory
        try:
            from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
            from prometheus_client.exposition import ThreadingWSGIServer
            from prometheus_client.multiprocess import MultiProcessCollector
        except ImportError:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise _inputs.Failure("--metrics-bind needs prometheus_client (Debian: apt install "
                                  "python3-prometheus-client; PyPI: pip install 'deviceid-verifier[metrics]')") from None

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.directory)  # type: ignore[no-untyped-call]  # untyped in 0.16
        ours = CollectorRegistry()  # the workers' metrics; the master exposes `registry`'s sums of them
        self.requests = Counter("deviceid_verifier_requests_total", "Requests answered, by operation and HTTP status",
                                ["operation", "status"], registry=ours)
        self.rejections = Counter("deviceid_verifier_rejections_total", "Requests refused with a 4xx, by reason",
                                  ["reason"], registry=ours)
        self.duration = Histogram("deviceid_verifier_request_duration_seconds",
                                  "Seconds from a request's arrival at the application to its answer's body",
                                  ["operation"], buckets=BUCKETS, registry=ours)
        self.unavailable = Counter("deviceid_verifier_database_unavailable_total",
                                   "Requests answered 503 because the database did not answer", registry=ours)

        class Server(ThreadingWSGIServer):
            address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

        try:
            self.server = Server((host, port), _QuietHandler)
        except OSError as e:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise _inputs.Failure(f"--metrics-bind {bind}: {e.strerror}") from None
        self.server.set_app(make_wsgi_app(registry))
        self._operations = _operations()

    def gunicorn_options(self, options: Dict[str, Any]) -> Dict[str, Any]:
        """`options` with gunicorn server hooks added (after any hook of the same name there): the
        master answers scrapes once it is ready; a worker closes its copy of the metrics socket
        (only the master listens there); the directory goes when the master exits."""
        def when_ready(_: Any) -> None:
            threading.Thread(target=self.server.serve_forever, name="metrics", daemon=True).start()

        def post_fork(_: Any, __: Any) -> None:
            self.server.socket.close()

        def on_exit(_: Any) -> None:
            self.server.server_close()
            shutil.rmtree(self.directory, ignore_errors=True)

        hooks: Dict[str, Callable[..., None]] = {"when_ready": when_ready, "post_fork": post_fork, "on_exit": on_exit}
        return {**options, **{name: _after(options.get(name), hook) for name, hook in hooks.items()}}

    def wrap(self, app: WSGIApp) -> WSGIApp:
        """`app`, counting and timing every request it answers."""
        def counted(environ: Mapping[str, Any], start_response: StartResponse) -> Iterable[bytes]:
            started = time.perf_counter()
            status: List[str] = []

            def recording(line: str, headers: List[Tuple[str, str]], *exc_info: Any) -> Any:
                status[:] = [line[:3]]
                return start_response(line, headers, *exc_info)

            answer = app(environ, recording)
            try:
                chunks = list(answer)
            finally:
                close: Optional[Callable[[], None]] = getattr(answer, "close", None)
                if close is not None:
                    close()
            self._count(self._operations.get(environ.get("PATH_INFO") or "/", "unknown"), status[0] if status else "",
                        chunks, time.perf_counter() - started)
            return chunks
        return counted

    def _count(self, operation: str, status: str, chunks: List[bytes], seconds: float) -> None:
        self.requests.labels(operation, status).inc()
        self.duration.labels(operation).observe(seconds)
        if status == "503":
            self.unavailable.inc()
        elif status.startswith("4"):
            self.rejections.labels(_reason(b"".join(chunks))).inc()


def _after(first: Optional[Callable[..., None]], then: Callable[..., None]) -> Callable[..., None]:
    """A gunicorn hook that runs `first` (when there is one), then `then`."""
    if first is None:
        return then
    earlier: Callable[..., None] = first

    def both(*args: Any) -> None:
        earlier(*args)
        then(*args)
    both.__signature__ = inspect.signature(then)  # type: ignore[attr-defined]  # gunicorn checks a hook's arity
    return both


def _reason(body: bytes) -> str:
    """The REASON of a 4xx body {"rejected": REASON, …}; "unknown" for another (a HEAD's empty one)."""
    try:
        reason = json.loads(body).get("rejected")
    except (ValueError, AttributeError):
        return "unknown"
    return reason if isinstance(reason, str) and reason in REASONS else "unknown"
