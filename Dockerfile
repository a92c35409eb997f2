# syntax=docker/dockerfile:1
# Build: docker build -t recall .
# Run:   docker run -p 8080:8080 -v recall-data:/data recall
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same flags CI's build check uses: static, trimmed, stripped.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/recall ./cmd/recall

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/recall /recall
ENV RECALL_LISTEN=0.0.0.0:8080 RECALL_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/recall"]
CMD ["serve"]
