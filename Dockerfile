# syntax=docker/dockerfile:1
# The `strait` image: the static musl binary and the CA roots, FROM scratch (no shell, no
# libc, no package manager). Build:  docker build -t strait:dev .
# Nothing here has been built on the machines Strait is developed on (they have no
# container engine): scripts/build-static runs the same cargo command and is tested.

FROM rust:1.95-bookworm AS build
# zstd-sys compiles C: musl-tools is its musl C compiler.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends musl-tools ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
ENV CC_x86_64_unknown_linux_musl=musl-gcc
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p strait --bin strait \
 && strip target/x86_64-unknown-linux-musl/release/strait \
 && mkdir -p /out/etc/ssl/certs /out/etc/strait \
 && cp target/x86_64-unknown-linux-musl/release/strait /out/strait \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ca-certificates.crt

FROM scratch
COPY --from=build /out/ /
# The system CA store for TLS (`ca_file` unset) is read from here.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# No root: Strait needs no privilege (the metrics port is above 1024).
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["/strait"]
CMD ["run", "-c", "/etc/strait/strait.toml"]
