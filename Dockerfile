# Multi-stage image of the operator and the kubectl plugin.
#
#   docker build -t IMAGE .    (or podman build / buildah bud; BuildKit or buildah for RUN --mount)
#
# The build stage runs exactly what the tests run: hack/install-deps.sh, then
# Bazel (Debian's bazel-bootstrap, offline WORKSPACE) on the same targets with
# the same .bazelrc. The runtime stage holds the binaries, the shared libraries
# they link from Debian, and nothing else; it runs as the unprivileged 65532:65532
# and needs no writable path but the certificate directory the Deployment mounts.
# hack/image.sh builds this file unchanged where no registry is reachable, and
# hack/image_check.sh (a tier of ./hack/test.sh) runs the result as a kubelet would.
FROM debian:bookworm AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates sudo \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The toolchain layer depends on the install script only, so a source change reuses it.
COPY hack/install-deps.sh hack/
RUN ./hack/install-deps.sh --build-only
COPY . .
# Bazel's disk cache survives between builds (a cache mount, never part of an image); the
# output base is removed so the layer holds only /out. --strip=always links without debug
# info (the symbol table stays, for backtraces): 5.6 MB for both binaries instead of 35 MB.
# The commit both binaries report with --version (hack/image.sh passes it; a change rebuilds
# only base/version.cc).
ARG KMT_COMMIT=unknown
RUN --mount=type=cache,id=kmt-bazel-disk,target=/var/cache/kmt-bazel-disk \
    bazel build --disk_cache=/var/cache/kmt-bazel-disk --compilation_mode=opt --strip=always \
        --define=KMT_COMMIT="${KMT_COMMIT}" \
        //cmd/operator:operator //cli:kubectl-migrate \
    && mkdir -p /out \
    && cp bazel-bin/cmd/operator/operator bazel-bin/cli/kubectl-migrate /out/ \
    && bazel clean --expunge

FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        ca-certificates libssl3 zlib1g libbrotli1 libcpp-httplib0.11 libfmt9 libyaml-cpp0.7 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/operator /usr/local/bin/migration-target-operator
COPY --from=build /out/kubectl-migrate /usr/local/bin/kubectl-migrate
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/migration-target-operator"]
