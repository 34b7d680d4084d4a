# syntax=docker/dockerfile:1
# Kinference image: the one `kinference` binary on Debian 12 slim, run as a non-root user.
#   docker build -t kinference/kinference:0.1.0 .
#   docker run --rm kinference/kinference:0.1.0 gateway --help
# The Helm chart (deploy/helm/kinference) runs it as `controller` and `gateway --kubernetes`.

# --- build: the same Debian 12 packages as a development machine (scripts/install-deps.sh).
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    && cmake --build build --target kinference \
    && strip --strip-debug -o /kinference build/kinference

# --- runtime: the packages of the shared libraries `kinference` links against (its DT_NEEDED
# entries, mapped to Debian packages with dpkg -S; apt brings their own dependencies), plus
# ca-certificates for TLS to external providers. tests/deploy/dockerfile_runtime_test.sh
# fails when a library `ldd` lists is neither from a package here nor from one apt installs
# with them: add the package here when a new library is linked.
FROM debian:12-slim AS runtime
ARG KINFERENCE_RUNTIME_PACKAGES="\
    ca-certificates \
    libboost-json1.81.0 \
    libboost-url1.81.0 \
    libc6 \
    libfmt9 \
    libgcc-s1 \
    libhiredis0.14 \
    libicu72 \
    libpcre2-8-0 \
    libpq5 \
    libspdlog1.10 \
    libsqlite3-0 \
    libssl3 \
    libstdc++6 \
    libxxhash0 \
    libyaml-cpp0.7 \
    libzmq5"
RUN apt-get update \
    && apt-get install -y --no-install-recommends $KINFERENCE_RUNTIME_PACKAGES \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 65532 kinference \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin kinference
COPY --from=build /kinference /usr/local/bin/kinference
USER 65532:65532
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/kinference"]
CMD ["--help"]
