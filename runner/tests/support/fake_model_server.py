#!/usr/bin/env python3
"""A stand-in for llama-server in the managed-endpoint tests: takes the same flags, serves /health
(503 for a moment while "loading", then 200) and /v1/models with the `--alias` id, or with the id in
FAKE_REPORT_ID when that environment file exists next to the model file (`<model>.report-id`)."""

import http.server
import json
import os
import sys
import time

args = sys.argv[1:]


def flag(name, default=None):
    return args[args.index(name) + 1] if name in args else default


alias = flag("--alias", "model")
port = int(flag("--port", "8080"))
model = flag("-m", "")
report_file = model + ".report-id"
reported = open(report_file).read().strip() if os.path.exists(report_file) else alias
started = time.time()
print(f"fake model server pid {os.getpid()} pgid {os.getpgid(0)} alias {alias}", flush=True)
print(f"niceness {os.nice(0)} args {json.dumps(args)}", flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            if time.time() - started < 0.5:
                self.send_json(503, {"error": {"code": 503, "message": "Loading model"}})
            else:
                self.send_json(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": reported, "object": "model"}]})
        else:
            self.send_json(404, {"error": "not found"})


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
