# syntax=docker/dockerfile:1
# Multi-stage: build the static binary with the same script CI uses, ship it alone.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN sh scripts/build.sh /out/tollgate

FROM gcr.io/distroless/static-debian12:nonroot
WORKDIR /app
COPY --from=build /out/tollgate /usr/local/bin/tollgate
# A sample only: mount your own plans file and set PLANS_FILE.
COPY config/plans.yml /app/config/plans.yml
USER nonroot:nonroot
ENV APP_ENV=production ADDR=:8080
EXPOSE 8080
# Through the binary itself: the image has no shell and no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/usr/local/bin/tollgate", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/tollgate"]
CMD ["serve"]
