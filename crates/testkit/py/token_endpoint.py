#!/usr/bin/env python3
"""An OAuth 2.0 token endpoint (client-credentials grant) over HTTPS, for Strait's tests.

    token_endpoint.py serve --cert PEM --key PEM --secret-file FILE --clients-file FILE \
        [--port 0] [--lifetime-s 3600] [--events FILE] [--parent-stdin]
    token_endpoint.py mint --secret-file FILE --sub NAME [--lifetime-s 3600] [--scope S] \
        [--out FILE]

serve: POST (any path; /token by convention) with form `grant_type=client_credentials` and
optional `scope` (RFC 6749 section 4.4, KIP-768). The client authenticates with HTTP Basic
(`Authorization: Basic base64(id:secret)`) or form `client_id` / `client_secret`. Answers
{"access_token": JWT, "token_type": "bearer", "expires_in": N, "scope": S}; the JWT is
HS256-signed with the shared secret (secure_front.py validates it) and carries
sub (= client id), iat, exp, scope and iss. A wrong secret or unknown client gets
401 {"error": "invalid_client"}, another grant type 400 {"error": "unsupported_grant_type"}.
clients.json: {"client-id": "client-secret", ...}. Prints `{"event": "ready", "port": N}`
on stdout once listening; one JSON line per request goes to --events. With --parent-stdin
it exits when stdin reaches EOF.

mint: prints a token (or writes it to --out, for a "token file" provider) signed with the
same secret. --lifetime-s may be negative (an already expired token).
"""

import argparse
import base64
import hashlib
import hmac
import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def mint(secret, sub, lifetime_s, scope=None, issuer="strait-testkit"):
    now = int(time.time())
    header = {"alg": "HS256", "typ": "JWT"}
    claims = {"sub": sub, "iat": now, "exp": now + int(lifetime_s), "iss": issuer}
    if scope:
        claims["scope"] = scope
    signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                     b64url(json.dumps(claims, separators=(",", ":")).encode()))
    sig = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(sig)


def read_secret(path):
    with open(path, "rb") as f:
        return f.read().strip()


class Events:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else sys.stderr
        self.lock = threading.Lock()

    def emit(self, event, **fields):
        line = json.dumps({"ts": round(time.time(), 3), "event": event, **fields})
        with self.lock:
            self.f.write(line + "\n")
            self.f.flush()


def make_handler(secret, clients, lifetime_s, events):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # keep stderr quiet; events say what happened
            pass

        def send_json(self, status, obj, extra_headers=()):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for k, v in extra_headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.send_json(405, {"error": "invalid_request", "error_description": "use POST"})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n).decode("utf-8", "replace")
            form = {k: v[0] for k, v in urllib.parse.parse_qs(raw, keep_blank_values=True).items()}
            cid = csecret = None
            auth = self.headers.get("Authorization") or ""
            how = "none"
            if auth.lower().startswith("basic "):
                try:
                    dec = base64.b64decode(auth[6:].strip()).decode("utf-8")
                    cid, _, csecret = dec.partition(":")
                    # RFC 6749 2.3.1: both parts are form-urlencoded before base64.
                    cid, csecret = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(csecret)
                    how = "basic"
                except ValueError:
                    pass
            elif "client_id" in form:
                cid, csecret, how = form.get("client_id"), form.get("client_secret"), "form"
            scope = form.get("scope") or None
            grant = form.get("grant_type")
            if grant != "client_credentials":
                events.emit("token_refused", client_id=cid, reason=f"grant_type={grant}")
                self.send_json(400, {"error": "unsupported_grant_type"})
                return
            known = clients.get(cid) if cid is not None else None
            if known is None or csecret is None or not hmac.compare_digest(
                    known.encode(), csecret.encode()):
                events.emit("token_refused", client_id=cid, auth=how, reason="invalid_client")
                self.send_json(401, {"error": "invalid_client"},
                               [("WWW-Authenticate", 'Basic realm="strait-testkit"')])
                return
            token = mint(secret, cid, lifetime_s, scope)
            events.emit("token_issued", client_id=cid, auth=how, scope=scope,
                        expires_in=lifetime_s, path=self.path)
            out = {"access_token": token, "token_type": "bearer", "expires_in": lifetime_s}
            if scope:
                out["scope"] = scope
            self.send_json(200, out)

    return Handler


def cmd_serve(args):
    secret = read_secret(args.secret_file)
    with open(args.clients_file) as f:
        clients = json.load(f)
    events = Events(args.events)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", args.port), make_handler(secret, clients, args.lifetime_s, events))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    port = httpd.server_address[1]
    events.emit("listening", port=port, lifetime_s=args.lifetime_s)
    sys.stdout.write(json.dumps({"event": "ready", "port": port}) + "\n")
    sys.stdout.flush()
    if args.parent_stdin:
        def watch():
            while sys.stdin.readline():
                pass
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    httpd.serve_forever()


def cmd_mint(args):
    token = mint(read_secret(args.secret_file), args.sub, args.lifetime_s, args.scope)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(token + "\n")
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(token + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--secret-file", required=True)
    s.add_argument("--clients-file", required=True)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--lifetime-s", type=int, default=3600)
    s.add_argument("--events")
    s.add_argument("--parent-stdin", action="store_true")
    s.set_defaults(fn=cmd_serve)
    s = sub.add_parser("mint")
    s.add_argument("--secret-file", required=True)
    s.add_argument("--sub", required=True)
    s.add_argument("--lifetime-s", type=int, default=3600)
    s.add_argument("--scope")
    s.add_argument("--out")
    s.set_defaults(fn=cmd_mint)
    args = ap.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
