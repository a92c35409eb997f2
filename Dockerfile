# syntax=docker/dockerfile:1
# Build: docker build --build-arg VERSION="$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -t recall .
# Run:   docker run -d --name recall --stop-timeout 35 -p 8080:8080 -v recall-data:/data recall
# Stop:  docker stop -t 35 recall   (Recall lets streams finish for up to 30 s;
#        Docker's default 10 s would kill them mid-answer)
FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git is not in the build context, so Go cannot stamp a VCS revision:
# the version comes in as a build argument.
ARG VERSION=dev
# The same flags as CI's release build: static, trimmed, stripped, versioned.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/recall ./cmd/recall
# An empty data directory for the runtime user to own (distroless has no
# shell to mkdir or chown in the final stage).
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/recall /recall
# A new named volume mounted on /data starts as a copy of the image's /data,
# owner included: owned by root, Recall (uid 65532) could not open Badger.
COPY --from=build --chown=65532:65532 /out/data /data
ENV RECALL_LISTEN=0.0.0.0:8080 RECALL_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
# recall health GETs /readyz on the port of RECALL_LISTEN: no shell or curl needed.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/recall", "health"]
ENTRYPOINT ["/recall"]
CMD ["serve"]
