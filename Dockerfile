# syntax=docker/dockerfile:1
# Kinference image: the one `kinference` binary on Debian 12 slim, run as a non-root user.
#   podman build -t REGISTRY/kinference:0.1.0 --build-arg GIT_COMMIT=$(git rev-parse HEAD) .
#   podman run --rm REGISTRY/kinference:0.1.0 gateway --help
# (docker build works the same.) No public registry publishes it: push it to yours and set
# the Helm chart's image.repository (deploy/helm/kinference, which runs it as `controller`
# and `gateway --kubernetes`).
# Base images: pin them by digest where you pull from a registry, e.g.
#   --build-arg BUILD_IMAGE=debian:12@sha256:... --build-arg RUNTIME_IMAGE=debian:12-slim@sha256:...
ARG BUILD_IMAGE=debian:12
ARG RUNTIME_IMAGE=debian:12-slim

# --- build: the same Debian 12 packages as a development machine (scripts/install-deps.sh).
FROM ${BUILD_IMAGE} AS build
# The commit `kinference --version` and kinference_build_info{commit} report (the build
# context has no .git).
ARG GIT_COMMIT=""
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN bash scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DKINFERENCE_GIT_COMMIT="$GIT_COMMIT" \
    && cmake --build build --target kinference \
    && strip --strip-debug -o /kinference build/kinference

# --- runtime: the packages of the shared libraries `kinference` links against (its DT_NEEDED
# entries, mapped to Debian packages with dpkg -S; apt brings their own dependencies), plus
# ca-certificates for TLS to external providers. tests/deploy/dockerfile_runtime_test.sh
# fails when a library `ldd` lists is neither from a package here nor from one apt installs
# with them: add the package here when a new library is linked.
FROM ${RUNTIME_IMAGE} AS runtime
ARG GIT_COMMIT=""
LABEL org.opencontainers.image.title="kinference" \
      org.opencontainers.image.description="TTFT-aware inference gateway and control plane for vLLM" \
      org.opencontainers.image.source="https://github.com/kinference/kinference" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.revision="${GIT_COMMIT}"
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
# API port; 9090 the admin port when admin_listen is set (docs/operations.md).
EXPOSE 8000 9090
ENTRYPOINT ["/usr/local/bin/kinference"]
CMD ["--help"]
