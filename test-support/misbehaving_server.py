#!/usr/bin/env python3
"""A purpose-built misbehaving MCP server for the runner's fault tests (stdio, standard library only).

Usage: misbehaving_server.py MODE

Modes (each misbehaves in exactly one way and is otherwise a correct MCP server):
  well-behaved      a correct server with one tool, `echo`
  hang              never answers tools/call, and ignores end of input (needs a signal)
  crash             exits with status 3 in the middle of a tools/call
  flood             answers tools/call with a 5 MB text result after 20,000 log notifications
  malformed         writes non-JSON lines and a truncated JSON line on stdout before every answer
  banner            prints a non-JSON banner on stdout before anything else
  lie               lists `echo` twice and a tool `ghost` that does not exist when called
  cursor-loop       tools/list always answers nextCursor "again"
  endless-pages     tools/list always answers a new nextCursor
  echo-version      answers initialize with whatever protocolVersion the client offered
  old-version       always answers protocolVersion 2024-11-05
  spawn-child       starts a long-lived child process (a grandchild of the runner) at start
  slow-start        sleeps 3 s before reading anything
  no-init           reads every request and never answers initialize
  exit-at-start     writes a complaint on stderr and exits with status 1 before reading anything
  wrong-id          answers tools/call with an id 1000 higher than the request's
  huge              answers tools/call with a 100 MB text result
  stderr-flood      writes 40 MB to stderr before answering tools/call
  no-content        answers tools/call with a result that has no `content` (schema-invalid JSON-RPC)
  string-schema     lists `echo` with an `inputSchema` of type string, not an object schema
  numeric-version   answers initialize with protocolVersion as a number (20251125), not a string
"""

import json
import os
import subprocess
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "well-behaved"
SUPPORTED = "2025-11-25"

ECHO_TOOL = {
    "name": "echo",
    "description": "Returns its text argument.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def garbage():
    if MODE == "malformed":
        sys.stdout.write("this is not JSON\n")
        sys.stdout.write('{"jsonrpc": "2.0", "id": \n')
        sys.stdout.flush()


def answer(req_id, result):
    garbage()
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def error(req_id, code, message):
    garbage()
    send({"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}})


def handle(msg):
    method = msg.get("method")
    req_id = msg.get("id")
    params = msg.get("params") or {}
    if req_id is None:
        return  # a notification
    if method == "initialize":
        if MODE == "no-init":
            return
        offered = params.get("protocolVersion", "")
        if MODE == "echo-version":
            version = offered
        elif MODE == "numeric-version":
            version = 20251125
        elif MODE == "old-version":
            version = "2024-11-05"
        else:
            version = SUPPORTED
        answer(
            req_id,
            {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "misbehaving-" + MODE, "version": "1.0.0"},
            },
        )
    elif method == "tools/list":
        cursor = params.get("cursor")
        if MODE == "lie":
            ghost = {"name": "ghost", "description": "Listed, never served.", "inputSchema": {"type": "object"}}
            answer(req_id, {"tools": [ECHO_TOOL, ECHO_TOOL, ghost]})
        elif MODE == "cursor-loop":
            answer(req_id, {"tools": [ECHO_TOOL] if cursor is None else [], "nextCursor": "again"})
        elif MODE == "endless-pages":
            n = 0 if cursor is None else int(cursor.split("-")[1]) + 1
            answer(req_id, {"tools": [ECHO_TOOL] if n == 0 else [], "nextCursor": "page-%d" % n})
        elif MODE == "string-schema":
            answer(req_id, {"tools": [dict(ECHO_TOOL, inputSchema={"type": "string"})]})
        else:
            answer(req_id, {"tools": [ECHO_TOOL]})
    elif method == "tools/call":
        name = params.get("name")
        args = params.get("arguments") or {}
        if MODE == "hang":
            return
        if MODE == "crash":
            sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": {"content": [' % json.dumps(req_id))
            sys.stdout.flush()
            os._exit(3)
        if name != "echo":
            error(req_id, -32602, "Unknown tool: %s" % name)
            return
        text = str(args.get("text", ""))
        if MODE == "wrong-id" and isinstance(req_id, int):
            answer(req_id + 1000, {"content": [{"type": "text", "text": text}], "isError": False})
            return
        if MODE == "huge":
            text = text + ("y" * (100 * 1000 * 1000))
        if MODE == "stderr-flood":
            chunk = ("stderr flood " * 80 + "\n") * 100
            for _ in range(40 * 1000 * 1000 // len(chunk) + 1):
                sys.stderr.write(chunk)
            sys.stderr.flush()
        if MODE == "flood":
            for i in range(20000):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "flood %d" % i}})
            text = text + ("x" * (5 * 1024 * 1024))
        if MODE == "no-content":
            answer(req_id, {"isError": False, "text": text})
            return
        answer(req_id, {"content": [{"type": "text", "text": text}], "isError": False})
    elif method == "ping":
        answer(req_id, {})
    else:
        error(req_id, -32601, "Method not found: %s" % method)


def main():
    if MODE == "spawn-child":
        subprocess.Popen(["sleep", "600"])
    if MODE == "slow-start":
        time.sleep(3)
    if MODE == "exit-at-start":
        sys.stderr.write("misbehaving server: refusing to start\n")
        sys.stderr.flush()
        sys.exit(1)
    if MODE == "banner":
        sys.stdout.write("Starting misbehaving server v1.0 ...\n")
        sys.stdout.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        handle(msg)
    if MODE == "hang":
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
