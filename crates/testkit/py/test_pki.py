#!/usr/bin/env python3
"""Generates a throwaway PKI for TLS tests (Python `cryptography` package).

    test_pki.py DIR

Writes into DIR (created if missing) and prints a JSON object {name: absolute path}:

  ca.pem / ca.key                   test CA (EC P-256), the trust anchor
  server.pem / server.key           server cert for 127.0.0.1 + localhost (SAN IP and DNS),
                                    RSA-2048 key, PKCS#8; signed by the CA
  client.pem / client.key           client cert (CN=strait-client, clientAuth), EC P-256,
                                    PKCS#8 ("BEGIN PRIVATE KEY")
  client.sec1.key                   the same EC key in SEC1 form ("BEGIN EC PRIVATE KEY")
  client-rsa.pem / client-rsa.key   a second client cert (CN=strait-client-rsa), RSA-2048
                                    key, PKCS#8
  client-rsa.pkcs1.key              the same RSA key in PKCS#1 ("BEGIN RSA PRIVATE KEY")
  expired.pem / expired.key         server cert for 127.0.0.1 + localhost that expired
                                    a day ago (valid from 30 days ago); EC P-256
  wrong-host.pem / wrong-host.key   server cert whose only SAN is DNS:wrong.example; EC P-256
  other-ca.pem / other-ca.key       a second, unrelated CA (for "untrusted CA" tests)
  other-server.pem / .key           server cert for 127.0.0.1 + localhost signed by other-ca
  other-client.pem / .key           client cert signed by other-ca (refused by mutual TLS)
  server-chain.pem                  server.pem followed by ca.pem
  client-bundle.pem                 client.pem followed by client.key (one-file form)

All keys are unencrypted. Certificates are valid from one hour ago for 30 days (except
expired.pem).
"""

import datetime
import ipaddress
import json
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PEM = serialization.Encoding.PEM
NOENC = serialization.NoEncryption()


def name(cn):
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "strait-testkit"),
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
    ])


def ec_key():
    return ec.generate_private_key(ec.SECP256R1())


def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def cert(subject_cn, key, issuer_cert, issuer_key, *, ca=False, sans=None, usage=None,
         not_before=None, not_after=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    not_before = not_before or now - datetime.timedelta(hours=1)
    not_after = not_after or now + datetime.timedelta(days=30)
    subject = name(subject_cn)
    issuer = issuer_cert.subject if issuer_cert is not None else subject
    b = (x509.CertificateBuilder()
         .subject_name(subject)
         .issuer_name(issuer)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(not_before)
         .not_valid_after(not_after)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False))
    if issuer_cert is not None:
        b = b.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), False)
    if ca:
        b = b.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), True)
    else:
        b = b.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False,
            key_encipherment=isinstance(key, rsa.RSAPrivateKey), data_encipherment=False,
            key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False,
            decipher_only=False), True)
        if usage:
            b = b.add_extension(x509.ExtendedKeyUsage(usage), False)
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), False)
    return b.sign(issuer_key if issuer_key is not None else key, hashes.SHA256())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_pki.py DIR")
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    paths = {}

    def write(fname, data, label):
        p = os.path.join(out, fname)
        with open(p, "wb") as f:
            f.write(data)
        paths[label] = p

    def write_cert(fname, c, label):
        write(fname, c.public_bytes(PEM), label)

    def write_key(fname, k, label, fmt=serialization.PrivateFormat.PKCS8):
        write(fname, k.private_bytes(PEM, fmt, NOENC), label)

    local = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    server_eku = [ExtendedKeyUsageOID.SERVER_AUTH]
    client_eku = [ExtendedKeyUsageOID.CLIENT_AUTH]

    ca_key = ec_key()
    ca = cert("strait-testkit CA", ca_key, None, None, ca=True)
    write_cert("ca.pem", ca, "ca_cert")
    write_key("ca.key", ca_key, "ca_key")

    k = rsa_key()
    server = cert("localhost", k, ca, ca_key, sans=local, usage=server_eku)
    write_cert("server.pem", server, "server_cert")
    write_key("server.key", k, "server_key")
    write("server-chain.pem", server.public_bytes(PEM) + ca.public_bytes(PEM), "server_chain")

    k = ec_key()
    c = cert("strait-client", k, ca, ca_key, usage=client_eku)
    write_cert("client.pem", c, "client_cert")
    write_key("client.key", k, "client_key")
    write_key("client.sec1.key", k, "client_key_sec1",
              serialization.PrivateFormat.TraditionalOpenSSL)
    write("client-bundle.pem",
          c.public_bytes(PEM) + k.private_bytes(PEM, serialization.PrivateFormat.PKCS8, NOENC),
          "client_bundle")

    k = rsa_key()
    c = cert("strait-client-rsa", k, ca, ca_key, usage=client_eku)
    write_cert("client-rsa.pem", c, "client_rsa_cert")
    write_key("client-rsa.key", k, "client_rsa_key")
    write_key("client-rsa.pkcs1.key", k, "client_rsa_key_pkcs1",
              serialization.PrivateFormat.TraditionalOpenSSL)

    now = datetime.datetime.now(datetime.timezone.utc)
    k = ec_key()
    c = cert("localhost", k, ca, ca_key, sans=local, usage=server_eku,
             not_before=now - datetime.timedelta(days=30),
             not_after=now - datetime.timedelta(days=1))
    write_cert("expired.pem", c, "expired_cert")
    write_key("expired.key", k, "expired_key")

    k = ec_key()
    c = cert("wrong.example", k, ca, ca_key, sans=[x509.DNSName("wrong.example")],
             usage=server_eku)
    write_cert("wrong-host.pem", c, "wrong_host_cert")
    write_key("wrong-host.key", k, "wrong_host_key")

    other_key = ec_key()
    other = cert("unrelated CA", other_key, None, None, ca=True)
    write_cert("other-ca.pem", other, "other_ca_cert")
    write_key("other-ca.key", other_key, "other_ca_key")

    k = ec_key()
    c = cert("localhost", k, other, other_key, sans=local, usage=server_eku)
    write_cert("other-server.pem", c, "other_server_cert")
    write_key("other-server.key", k, "other_server_key")

    k = ec_key()
    c = cert("strait-client", k, other, other_key, usage=client_eku)
    write_cert("other-client.pem", c, "other_client_cert")
    write_key("other-client.key", k, "other_client_key")

    json.dump(paths, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
