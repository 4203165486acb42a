# The image `firedrill k8s` runs (--image): firedrill, the shell, date,
# tar and base64 its pod script uses, and the database clients a scenario's
# shell event may call (psql/pg_dump, mariadb/mysql, redis-cli).
#
#   podman build -t registry.example/firedrill:0.1 --build-arg VERSION=0.1 .
#
# The base images are arguments so that a build without Docker Hub can use
# local ones (internal/kube's image test does).
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# Stage 1: build firedrill, statically (no C library needed at run time).
FROM ${GO_IMAGE} AS build
ARG VERSION=0.1.0-dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/firedrill/firedrill/internal/clikit.Version=${VERSION}" \
      -o /out/firedrill ./cmd/firedrill

# Stage 2: the runtime, without the toolchain, as a user without rights.
FROM ${BASE_IMAGE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates coreutils tar postgresql-client mariadb-client redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --home-dir /firedrill --create-home firedrill \
 && mkdir -p /firedrill/runs /firedrill/scenario \
 && chown -R 10001:10001 /firedrill
COPY --from=build /out/firedrill /usr/local/bin/firedrill
USER 10001:10001
WORKDIR /firedrill
ENTRYPOINT ["firedrill"]
CMD ["--help"]
