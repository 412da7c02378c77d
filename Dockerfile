# Multi-stage image of the operator and the kubectl plugin.
#
# The build stage runs exactly what the tests run: hack/install-deps.sh, then
# Bazel (Debian's bazel-bootstrap, offline WORKSPACE) on the same targets with
# the same .bazelrc. The runtime stage holds the binary, the shared libraries it
# links from Debian, and nothing else; it runs as an unprivileged user.
# This repository's CI machine has no container engine, so the image is not
# built by the tests (see README, "Install on a real cluster").
FROM debian:bookworm AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates sudo \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Go is only needed by the e2e tier; the image build needs Bazel and the C++ libraries.
RUN ./hack/install-deps.sh --build-only
RUN bazel build --compilation_mode=opt //controller:operator //cli:kubectl-migrate \
    && mkdir -p /out \
    && cp bazel-bin/controller/operator bazel-bin/cli/kubectl-migrate /out/

FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        ca-certificates libssl3 zlib1g libbrotli1 libcpp-httplib0.11 libfmt9 libyaml-cpp0.7 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/operator /usr/local/bin/migration-target-operator
COPY --from=build /out/kubectl-migrate /usr/local/bin/kubectl-migrate
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/migration-target-operator"]
