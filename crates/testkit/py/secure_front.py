#!/usr/bin/env python3
"""A TLS and SASL front end for a Kafka broker that has neither (Tansu), for Strait's tests.

Listens on 127.0.0.1:PORT and forwards every connection to ONE upstream broker. Built on
independent implementations: Python's `ssl` module for TLS and the `scramp` package for the
SCRAM server side, so that a client's TLS/SASL code is tested against code it shares nothing
with. The Rust side is `strait_testkit::secure` (its module doc lists what this does and
does not do).

    secure_front.py [--port 0] [--upstream HOST:PORT | --upstream-stdin] [--events FILE]
        [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM] [--tls-min 1.2] [--tls-max 1.3]]
        [--sasl PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER] [--user NAME:PASSWORD ...]
        [--users-file users.json] [--oauth-secret-file FILE] [--session-lifetime-ms N]

* Once listening it prints one line `{"event": "ready", "port": N}` on stdout.
* `--upstream-stdin`: the first stdin line is the upstream `HOST:PORT` (so the broker can
  be started after the front end, advertising the front end's port). Connections wait for it.
* With `--upstream-stdin` the process exits when stdin reaches EOF (its parent is gone).
* Events: one JSON object per line, appended to `--events` (default: stderr), flushed at once:
  {"ts": unix-seconds, "event": NAME, "conn": n, ...}; see EVENT NAMES below.
* users.json: {"alice": "secret", ...}. The OAuth secret file holds the HS256 key shared
  with token_endpoint.py.

Without --sasl, frames are not parsed: bytes are relayed as they come (after TLS, if any).
With --sasl, the front end reads request frames. Before authentication it forwards
ApiVersions (making sure the response advertises SaslHandshake v0-1 and SaslAuthenticate
v0-2), answers SaslHandshake v1 and SaslAuthenticate v0-2 itself, and closes the connection
on any other request. After success every frame is forwarded byte for byte, except
SaslHandshake/SaslAuthenticate (KIP-368 re-authentication), which are answered here after
every earlier request on the connection has been answered, so responses stay in request
order. With --session-lifetime-ms, SaslAuthenticate v1+ carries session_lifetime_ms and a
connection whose session expired is closed on its next non-SASL request.

EVENT NAMES: listening, upstream, accepted, tls_ok, tls_failed, auth_ok, auth_failed,
reauth_ok, reauth_failed, refused (request before authentication), session_expired, closed.
"""

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import os
import ssl
import struct
import sys
import threading
import time

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
API_VERSIONS = 18
PRODUCE = 0

NONE = 0
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58

MAX_FRAME = 100 * 1024 * 1024
ALL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


# --------------------------------------------------------------------------- events

class Events:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else sys.stderr
        self.lock = threading.Lock()

    def emit(self, event, **fields):
        line = json.dumps({"ts": round(time.time(), 3), "event": event, **fields})
        with self.lock:
            self.f.write(line + "\n")
            self.f.flush()


# --------------------------------------------------------------------------- wire helpers

class Reader:
    """Cursor over one frame's bytes."""

    def __init__(self, data, pos=0):
        self.d = data
        self.p = pos

    def take(self, n):
        if n < 0 or self.p + n > len(self.d):
            raise ValueError("frame too short")
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self):
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 35:
                raise ValueError("varint too long")

    def nullable_string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def compact_nullable_string(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode("utf-8", "replace")

    def bytes_(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def compact_bytes(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n)

    def tagged_fields(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def rest(self):
        return self.d[self.p:]


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc_string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def enc_nullable_string(s, compact):
    if s is None:
        return b"\x00" if compact else struct.pack(">h", -1)
    b = s.encode()
    return (uvarint(len(b) + 1) if compact else struct.pack(">h", len(b))) + b


def enc_bytes(b, compact):
    return (uvarint(len(b) + 1) if compact else struct.pack(">i", len(b))) + b


def request_header_is_flexible(api_key, version):
    """Whether the request uses header v2 (tagged fields), for the APIs we parse."""
    return {
        API_VERSIONS: version >= 3,
        SASL_AUTHENTICATE: version >= 2,
        SASL_HANDSHAKE: False,
        PRODUCE: version >= 9,
    }.get(api_key)


class Request:
    def __init__(self, frame):
        r = Reader(frame)
        self.frame = frame
        self.api_key = r.i16()
        self.api_version = r.i16()
        self.correlation_id = r.i32()
        self.client_id = r.nullable_string()
        self.flexible = request_header_is_flexible(self.api_key, self.api_version)
        if self.flexible:
            r.tagged_fields()
        self.body = r

    def expects_response(self):
        """False only for Produce with acks=0."""
        if self.api_key != PRODUCE or self.flexible is None:
            return True
        try:
            r = Reader(self.body.d, self.body.p)
            if self.api_version >= 3:
                if self.flexible:
                    r.compact_nullable_string()
                else:
                    r.nullable_string()
            return r.i16() != 0
        except ValueError:
            return True


def response_frame(correlation_id, body, flexible_header=False):
    payload = struct.pack(">i", correlation_id) + (b"\x00" if flexible_header else b"") + body
    return struct.pack(">i", len(payload)) + payload


def rewrite_api_versions(version, payload):
    """Makes an ApiVersions response advertise SaslHandshake v0-1 and SaslAuthenticate v0-2.
    `payload` starts at the correlation id (the response header is always v0)."""
    r = Reader(payload)
    corr = r.i32()
    error = r.i16()
    if error != NONE:
        return payload  # e.g. UNSUPPORTED_VERSION: a v0-shaped body, leave it alone
    flexible = version >= 3
    n = r.uvarint() - 1 if flexible else r.i32()
    keys = []
    for _ in range(n):
        k, lo, hi = r.i16(), r.i16(), r.i16()
        tags = b""
        if flexible:
            start = r.p
            r.tagged_fields()
            tags = payload[start:r.p]
        keys.append([k, lo, hi, tags])
    rest = r.rest()
    want = {SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 2)}
    for e in keys:
        if e[0] in want:
            e[1], e[2] = want.pop(e[0])
    for k, (lo, hi) in want.items():
        keys.append([k, lo, hi, b"\x00" if flexible else b""])
    out = struct.pack(">ih", corr, error)
    out += uvarint(len(keys) + 1) if flexible else struct.pack(">i", len(keys))
    for k, lo, hi, tags in keys:
        out += struct.pack(">hhh", k, lo, hi) + tags
    return out + rest


async def read_frame(reader):
    head = await reader.readexactly(4)
    (n,) = struct.unpack(">i", head)
    if n < 0 or n > MAX_FRAME:
        raise ValueError(f"bad frame size {n}")
    return head + await reader.readexactly(n)


# --------------------------------------------------------------------------- SASL mechanisms

class AuthFailed(Exception):
    def __init__(self, message, auth_bytes=b"", user=None):
        super().__init__(message)
        self.auth_bytes = auth_bytes
        self.user = user


def jwt_verify(token, secret):
    """HS256 JWT check: signature, `exp` in the future, non-empty `sub`. Returns the claims."""
    try:
        h64, p64, s64 = token.split(".")
        pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
        header = json.loads(base64.urlsafe_b64decode(pad(h64)))
        claims = json.loads(base64.urlsafe_b64decode(pad(p64)))
        sig = base64.urlsafe_b64decode(pad(s64))
    except Exception as e:  # noqa: BLE001 - any malformation is one answer
        raise AuthFailed(f"malformed token: {e}")
    if header.get("alg") != "HS256":
        raise AuthFailed(f"token alg {header.get('alg')!r} is not HS256")
    want = hmac.new(secret, f"{h64}.{p64}".encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(sig, want):
        raise AuthFailed("bad token signature", user=claims.get("sub"))
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise AuthFailed("token has no sub")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or exp <= time.time():
        raise AuthFailed("token expired", user=sub)
    return claims


class PlainAuth:
    def __init__(self, cfg):
        self.cfg = cfg
        self.user = None
        self.done = False

    def step(self, data):
        parts = data.split(b"\x00")
        if len(parts) != 3:
            raise AuthFailed("malformed PLAIN message")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        self.user = user
        if authzid and authzid != user:
            raise AuthFailed("authorization id differs from user", user=user)
        known = self.cfg.users.get(user)
        if known is None or not hmac.compare_digest(known.encode(), password.encode()):
            raise AuthFailed("Invalid username or password", user=user)
        self.done = True
        return b""


class ScramAuth:
    def __init__(self, cfg, mechanism):
        import scramp
        self.cfg = cfg
        self.user = None
        self.done = False
        self.mech = scramp.ScramMechanism(mechanism)
        self.server = self.mech.make_server(self._auth_info)
        self.stage = 0

    def _auth_info(self, saslname):
        user = saslname.replace("=2C", ",").replace("=3D", "=")
        self.user = user
        password = self.cfg.users.get(user)
        if password is None:
            raise KeyError("unknown user")
        key = (self.mech.name, user)
        if key not in self.cfg.scram_cache:
            self.cfg.scram_cache[key] = self.mech.make_auth_info(password, iteration_count=4096)
        return self.cfg.scram_cache[key]

    def step(self, data):
        try:
            text = data.decode("utf-8")
            if self.stage == 0:
                self.stage = 1
                self.server.set_client_first(text)
                return self.server.get_server_first().encode()
            if self.stage == 1:
                self.stage = 2
                self.server.set_client_final(text)
                out = self.server.get_server_final().encode()
                self.done = True
                return out
        except Exception as e:  # noqa: BLE001 - scramp raises ScramException, auth_fn KeyError
            raise AuthFailed(f"Authentication failed during authentication due to invalid "
                             f"credentials with SASL mechanism {self.mech.name} ({e})",
                             user=self.user)
        raise AuthFailed("unexpected SCRAM message", user=self.user)


class OAuthBearerAuth:
    def __init__(self, cfg):
        self.cfg = cfg
        self.user = None
        self.done = False
        self.exp = None

    def step(self, data):
        # RFC 7628: gs2-header kvsep *(kvpair) kvsep, kvpair auth=Bearer <token>.
        try:
            text = data.decode("utf-8")
            gs2, rest = text.split("\x01", 1)
            if not gs2.startswith("n,") and not gs2.startswith("y,"):
                raise ValueError("bad gs2 header")
            kv = dict(p.split("=", 1) for p in rest.split("\x01") if p)
            auth = kv["auth"]
            scheme, token = auth.split(" ", 1)
            if scheme.lower() != "bearer":
                raise ValueError("not a bearer token")
        except (ValueError, KeyError, UnicodeDecodeError) as e:
            raise AuthFailed(f"malformed OAUTHBEARER message: {e}",
                             auth_bytes=self._error_json("invalid_request"))
        if self.cfg.oauth_secret is None:
            raise AuthFailed("no OAuth secret configured", auth_bytes=self._error_json())
        try:
            claims = jwt_verify(token.strip(), self.cfg.oauth_secret)
        except AuthFailed as e:
            self.user = e.user
            raise AuthFailed(f"invalid token: {e}", auth_bytes=self._error_json(), user=e.user)
        self.user = claims["sub"]
        self.exp = claims["exp"]
        self.done = True
        return b""

    @staticmethod
    def _error_json(status="invalid_token"):
        return json.dumps({"status": status}).encode()


# --------------------------------------------------------------------------- connections

class Config:
    def __init__(self, args):
        self.mechanisms = [m for m in (args.sasl or "").split(",") if m]
        for m in self.mechanisms:
            if m not in ALL_MECHANISMS:
                raise SystemExit(f"unknown SASL mechanism {m}")
        self.users = {}
        if args.users_file:
            with open(args.users_file) as f:
                self.users.update(json.load(f))
        for u in args.user:
            name, _, pw = u.partition(":")
            self.users[name] = pw
        self.oauth_secret = None
        if args.oauth_secret_file:
            with open(args.oauth_secret_file, "rb") as f:
                self.oauth_secret = f.read().strip()
        self.session_lifetime_ms = args.session_lifetime_ms
        self.scram_cache = {}
        self.ssl = None
        if args.tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            versions = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
            ctx.minimum_version = versions[args.tls_min]
            ctx.maximum_version = versions[args.tls_max]
            ctx.load_cert_chain(args.tls_cert, args.tls_key)
            if args.tls_client_ca:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(args.tls_client_ca)
            self.ssl = ctx
        self.upstream = None
        self.upstream_ready = asyncio.Event()

    def make_auth(self, mechanism):
        if mechanism == "PLAIN":
            return PlainAuth(self)
        if mechanism.startswith("SCRAM-"):
            return ScramAuth(self, mechanism)
        return OAuthBearerAuth(self)


class Closed(Exception):
    pass


class Connection:
    next_id = 0

    def __init__(self, cfg, events, reader, writer):
        Connection.next_id += 1
        self.id = Connection.next_id
        self.cfg = cfg
        self.ev = events
        self.cr, self.cw = reader, writer
        self.ur = self.uw = None
        self.pending = []  # expected upstream responses, in order: rewrite flag per entry
        self.drained = asyncio.Event()
        self.drained.set()
        self.upstream_task = None
        # SASL state
        self.authenticated = False
        self.mechanism = None      # of the current (or first) session
        self.principal = None
        self.expires_at = None     # monotonic seconds, None = never
        self.auth = None           # exchange in progress
        self.handshake_version = None
        self.reauth = False

    def emit(self, event, **fields):
        self.ev.emit(event, conn=self.id, **fields)

    async def run(self):
        peer = self.cw.get_extra_info("peername")
        self.emit("accepted", peer=f"{peer[0]}:{peer[1]}" if peer else None)
        reason = "eof"
        try:
            if self.cfg.ssl is not None:
                try:
                    await self.cw.start_tls(self.cfg.ssl, ssl_handshake_timeout=10)
                except (ssl.SSLError, OSError, asyncio.TimeoutError, ConnectionError) as e:
                    self.emit("tls_failed", error=f"{type(e).__name__}: {e}")
                    reason = "tls_failed"
                    return
                obj = self.cw.get_extra_info("ssl_object")
                cert = self.cw.get_extra_info("peercert")
                subject = None
                if cert:
                    subject = ",".join(f"{k}={v}" for rdn in cert.get("subject", ()) for k, v in rdn)
                self.emit("tls_ok", version=obj.version() if obj else None,
                          cipher=obj.cipher()[0] if obj else None, client_subject=subject)
            await self.open_upstream()
            if not self.cfg.mechanisms:
                await self.relay()
            else:
                await self.serve_sasl()
        except Closed as e:
            reason = str(e)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            reason = "eof"
        except ValueError as e:
            reason = f"protocol error: {e}"
        finally:
            for w in (self.cw, self.uw):
                if w is not None:
                    try:
                        w.close()
                    except Exception:  # noqa: BLE001
                        pass
            if self.upstream_task is not None:
                self.upstream_task.cancel()
            self.emit("closed", reason=reason)

    async def open_upstream(self):
        await self.cfg.upstream_ready.wait()
        host, port = self.cfg.upstream
        self.ur, self.uw = await asyncio.open_connection(host, port)

    async def relay(self):
        async def pipe(r, w):
            try:
                while True:
                    b = await r.read(65536)
                    if not b:
                        break
                    w.write(b)
                    await w.drain()
            finally:
                try:
                    w.close()
                except Exception:  # noqa: BLE001
                    pass
        await asyncio.gather(pipe(self.cr, self.uw), pipe(self.ur, self.cw),
                             return_exceptions=True)

    # ----------------------------------------------------------------- SASL mode

    async def upstream_loop(self):
        try:
            while True:
                frame = await read_frame(self.ur)
                if not self.pending:
                    raise ValueError("upstream sent a response nobody asked for")
                rewrite = self.pending.pop(0)
                if rewrite is not None:
                    frame = frame[:4] + rewrite_api_versions(rewrite, frame[4:])
                    frame = struct.pack(">i", len(frame) - 4) + frame[4:]
                self.cw.write(frame)
                await self.cw.drain()
                if not self.pending:
                    self.drained.set()
        except Exception:  # noqa: BLE001 - upstream gone: drop the client too
            self.cw.close()

    async def forward(self, req, rewrite_version=None):
        if self.upstream_task is None:
            self.upstream_task = asyncio.get_running_loop().create_task(self.upstream_loop())
        if req.expects_response():
            self.pending.append(rewrite_version)
            self.drained.clear()
        self.uw.write(req.frame)
        await self.uw.drain()

    async def reply(self, req, body, flexible_header=False):
        # Strict request order: everything forwarded before must be answered first.
        await self.drained.wait()
        self.cw.write(response_frame(req.correlation_id, body, flexible_header))
        await self.cw.drain()

    async def serve_sasl(self):
        while True:
            raw = await read_frame(self.cr)
            req = Request(raw[4:])
            req.frame = raw
            if req.api_key == SASL_HANDSHAKE:
                await self.on_handshake(req)
            elif req.api_key == SASL_AUTHENTICATE:
                await self.on_authenticate(req)
            elif not self.authenticated:
                if req.api_key == API_VERSIONS and self.auth is None:
                    await self.forward(req, rewrite_version=req.api_version)
                else:
                    self.emit("refused", api_key=req.api_key, api_version=req.api_version)
                    raise Closed(f"request api_key={req.api_key} before authentication")
            else:
                if self.expires_at is not None and time.monotonic() >= self.expires_at:
                    self.emit("session_expired", mechanism=self.mechanism, user=self.principal,
                              api_key=req.api_key)
                    raise Closed("session expired")
                await self.forward(req)

    async def on_handshake(self, req):
        mechanism = req.body.nullable_string()
        enabled = self.cfg.mechanisms
        body_tail = struct.pack(">i", len(enabled)) + b"".join(enc_string(m) for m in enabled)
        if self.auth is not None:
            await self.reply(req, struct.pack(">h", ILLEGAL_SASL_STATE) + body_tail)
            raise Closed("SaslHandshake during an exchange")
        if mechanism not in enabled:
            await self.reply(req, struct.pack(">h", UNSUPPORTED_SASL_MECHANISM) + body_tail)
            self.emit("auth_failed", mechanism=mechanism, user=None,
                      reason="unsupported mechanism", reauth=self.authenticated)
            raise Closed("unsupported mechanism")
        if self.authenticated and mechanism != self.mechanism:
            await self.reply(req, struct.pack(">h", SASL_AUTHENTICATION_FAILED) + body_tail)
            self.emit("reauth_failed", mechanism=mechanism, user=self.principal,
                      reason=f"mechanism changed from {self.mechanism}")
            raise Closed("re-authentication changed the mechanism")
        if req.api_version < 1:
            # v0 means raw SASL tokens follow, outside Kafka framing: not implemented.
            await self.reply(req, struct.pack(">h", UNSUPPORTED_SASL_MECHANISM) + body_tail)
            self.emit("auth_failed", mechanism=mechanism, user=None,
                      reason="SaslHandshake v0 (unframed tokens) is not supported",
                      reauth=self.authenticated)
            raise Closed("SaslHandshake v0")
        self.reauth = self.authenticated
        self.auth = self.cfg.make_auth(mechanism)
        self.pending_mechanism = mechanism
        await self.reply(req, struct.pack(">h", NONE) + body_tail)

    async def on_authenticate(self, req):
        v = req.api_version
        flexible = v >= 2
        r = req.body
        data = r.compact_bytes() if flexible else r.bytes_()
        data = data or b""

        def body(error, message, auth_bytes, lifetime_ms):
            out = struct.pack(">h", error) + enc_nullable_string(message, flexible)
            out += enc_bytes(auth_bytes, flexible)
            if v >= 1:
                out += struct.pack(">q", lifetime_ms)
            if flexible:
                out += b"\x00"
            return out

        if self.auth is None:
            await self.reply(req, body(ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake",
                                       b"", 0), flexible)
            raise Closed("SaslAuthenticate before SaslHandshake")
        mechanism = self.pending_mechanism
        try:
            out = self.auth.step(data)
        except AuthFailed as e:
            user = e.user or self.auth.user
            self.auth = None
            await self.reply(req, body(SASL_AUTHENTICATION_FAILED, str(e), e.auth_bytes, 0),
                             flexible)
            self.emit("reauth_failed" if self.reauth else "auth_failed", mechanism=mechanism,
                      user=user, reason=str(e))
            raise Closed("authentication failed")
        if not self.auth.done:
            await self.reply(req, body(NONE, None, out, 0), flexible)
            return
        user = self.auth.user
        if self.reauth and user != self.principal:
            self.auth = None
            msg = f"Cannot change principals during re-authentication from {self.principal}: {user}"
            await self.reply(req, body(SASL_AUTHENTICATION_FAILED, msg, b"", 0), flexible)
            self.emit("reauth_failed", mechanism=mechanism, user=user, reason=msg)
            raise Closed("re-authentication changed the principal")
        lifetime_ms = 0
        if self.cfg.session_lifetime_ms:
            lifetime_ms = self.cfg.session_lifetime_ms
            exp = getattr(self.auth, "exp", None)
            if exp is not None:  # as Kafka: never past the token's own expiry
                lifetime_ms = max(1, min(lifetime_ms, int((exp - time.time()) * 1000)))
            self.expires_at = time.monotonic() + lifetime_ms / 1000.0
        self.auth = None
        was_reauth = self.reauth
        self.authenticated = True
        self.mechanism = mechanism
        self.principal = user
        await self.reply(req, body(NONE, None, out, lifetime_ms), flexible)
        self.emit("reauth_ok" if was_reauth else "auth_ok", mechanism=mechanism, user=user,
                  session_lifetime_ms=lifetime_ms, api_version=v)


# --------------------------------------------------------------------------- main

def parse_hostport(s):
    host, _, port = s.strip().rpartition(":")
    return host or "127.0.0.1", int(port)


def stdin_watch(loop, cfg, events, want_upstream):
    """Reads the upstream address (first line) if asked, then waits for EOF and exits."""
    if want_upstream:
        line = sys.stdin.readline()
        if not line:
            os._exit(0)
        up = parse_hostport(line)

        def set_up():
            cfg.upstream = up
            cfg.upstream_ready.set()
            events.emit("upstream", upstream=f"{up[0]}:{up[1]}")
        loop.call_soon_threadsafe(set_up)
    while sys.stdin.readline():
        pass
    os._exit(0)


async def amain(args):
    events = Events(args.events)
    cfg = Config(args)
    if args.upstream:
        cfg.upstream = parse_hostport(args.upstream)
        cfg.upstream_ready.set()
    elif not args.upstream_stdin:
        raise SystemExit("give --upstream HOST:PORT or --upstream-stdin")

    async def on_client(reader, writer):
        await Connection(cfg, events, reader, writer).run()

    server = await asyncio.start_server(on_client, "127.0.0.1", args.port, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    events.emit("listening", port=port, tls=cfg.ssl is not None,
                mutual_tls=bool(args.tls_client_ca), sasl=cfg.mechanisms,
                session_lifetime_ms=cfg.session_lifetime_ms)
    sys.stdout.write(json.dumps({"event": "ready", "port": port}) + "\n")
    sys.stdout.flush()
    if args.upstream_stdin:
        loop = asyncio.get_running_loop()
        threading.Thread(target=stdin_watch, args=(loop, cfg, events, not args.upstream),
                         daemon=True).start()
    async with server:
        await server.serve_forever()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--upstream")
    ap.add_argument("--upstream-stdin", action="store_true",
                    help="read the upstream HOST:PORT from stdin; exit at stdin EOF")
    ap.add_argument("--events", help="append JSON event lines here (default stderr)")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-client-ca", help="require client certificates signed by this CA")
    ap.add_argument("--tls-min", default="1.2", choices=["1.2", "1.3"])
    ap.add_argument("--tls-max", default="1.3", choices=["1.2", "1.3"])
    ap.add_argument("--sasl", help="comma-separated mechanisms: " + ",".join(ALL_MECHANISMS))
    ap.add_argument("--user", action="append", default=[], help="NAME:PASSWORD, repeatable")
    ap.add_argument("--users-file", help='JSON {"name": "password", ...}')
    ap.add_argument("--oauth-secret-file", help="HS256 key for OAUTHBEARER tokens")
    ap.add_argument("--session-lifetime-ms", type=int, default=0)
    args = ap.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    try:
        asyncio.run(amain(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
