"""The floor beside bench/server.py's service rows: `python3 -m deviceid_verifier serve` as it
runs, its command line and gunicorn with the options, workers and worker class serve gives it,
with the application replaced by the least one that does the service's database round trips.
Each request: the body read, BENCH_FLOOR_ROUND_TRIPS round trips of one prepared statement on the
answering thread's own connection to --database (as the store's), and a JSON answer of the
service's size. What the service costs above this is its own work: parsing, verification, the
store's statements and commits.

    BENCH_FLOOR_ROUND_TRIPS=4 python3 bench/floor.py serve --database URL ... (serve's options)"""
import json
import os
import sys
import threading

import psycopg  # before the workers fork, as the service's store imports it

from deviceid_verifier import __main__ as command
from deviceid_verifier._service import _serve

ANSWER = {"v": 1, "type": "deviceid.assertion-verification", "app_id": "com.example.bench",
          "credential_id": "A" * 43, "counter": 1, "ak_certificate_serial": "a" * 38}


def application(url, round_trips):
    held = threading.local()

    def floor(environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        environ["wsgi.input"].read(length)
        if getattr(held, "pid", None) != os.getpid():
            # one connection per worker and thread, opened after the fork, as the store's
            held.pid, held.connection = os.getpid(), psycopg.connect(url, autocommit=True)
        connection = held.connection
        with connection.cursor() as cursor:
            for trip in range(round_trips):
                cursor.execute("SELECT %s::bigint", (trip,), prepare=True)
                cursor.fetchone()
        body = json.dumps(ANSWER, separators=(",", ":")).encode("utf-8")
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                  ("Cache-Control", "no-store")])
        return [body]

    return floor


if __name__ == "__main__":
    trips = int(os.environ["BENCH_FLOOR_ROUND_TRIPS"])
    _serve._application = lambda args: application(args.database, trips)
    sys.exit(command.main(sys.argv[1:]))
