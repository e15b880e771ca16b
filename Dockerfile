# certmgr-notify: service, operator, emitter and agent in one image (README "Container image").
#
# Stage 1 builds with the full dependency tree (esbuild is a devDependency); stage 2 ships only dist/: the
# single-file bundle (every production dependency inlined, no node_modules, no TypeScript loader), its source map,
# the GraphQL schema it reads at start-up and the console's static build (dist/ui). A restarted pod serves in
# about a second. test/image/image.int.test.ts runs this file's build commands and the runtime stage's files and
# entrypoint outside Docker (there is no Docker engine in CI).
#
# Base image: an exact Node release, the one package-lock.json's `node` devDependency pins, so the image runs the
# Node the test suite ran (the image test checks both agree). Pin a digest too when your registry policy wants
# it (`docker buildx imagetools inspect node:<tag>`); a digest cannot be resolved from CI here (no registry
# access), and an exact tag plus Renovate/Dependabot keeps security rebuilds a one-line change.
ARG NODE_IMAGE=node:24.21.0-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
RUN node scripts/build.mjs dist

FROM ${NODE_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="certmgr-notify" \
      org.opencontainers.image.description="Notifies people when cert-manager certificates or issuers are in trouble: service, operator, emitter and agent in one binary" \
      org.opencontainers.image.source="https://github.com/certmgr-notify/certmgr-notify" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
ENV NODE_ENV=production
# glibc's per-thread malloc arenas fragment the informers' many small allocations: at 30,000 certificates two
# arenas hold about 55 MiB less RSS (bench/scale.ts, BENCH_SCALE_MALLOC_ARENA_MAX; docs/performance.md)
ENV MALLOC_ARENA_MAX=2
# glibc's dynamic mmap threshold rises after a large free, after which the informers' page buffers (MiBs each) come
# from the arena and stay there: a fixed threshold returns them to the system
ENV MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=build /app/dist ./dist
# /data owned by the user before VOLUME (later changes to a volume path are discarded): a new named volume copies
# this directory's owner, so `docker run -v name:/data` is writable without a chown
RUN mkdir -p /data && chown 1000:1000 /data
# The program needs node only: the base image's package managers (and their bundled dependencies, which
# vulnerability scanners report) leave the runtime filesystem
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
# The node user of the base image, by number: the kubelet can only enforce runAsNonRoot on a numeric user
# (the chart's podSecurityContext uses the same uid/gid).
USER 1000:1000
# Everything the program writes: the SQLite store, its generated secret key and API key (/data), temporary files
# (/tmp). The root filesystem can be read-only (the chart's default); the CRDs are not read at run time (install
# them from crds/ or the chart).
VOLUME ["/data"]
EXPOSE 8080
# No HEALTHCHECK: Kubernetes ignores it and probes /healthz and /readyz (the chart's liveness/readiness probes).
# No --enable-source-maps: node decodes the whole bundle's map at start into ~150 MiB of heap (a serve process of
# 154 MiB RSS became 303 MiB; docs/performance.md "Scale"). Stack traces name the bundle's lines, whose module
# comments (`// src/...`) and function names locate the source; dist/certmgr-notify.mjs.map maps them exactly
# (NODE_OPTIONS=--enable-source-maps when debugging).
# V8's old space at half the container's memory limit (the chart's 512Mi: 256 MiB, what bench/scale.ts runs at
# 100,000 certificates with a relist) and a 1 MiB semi-space: the GC keeps its headroom small instead of letting
# the heap grow towards the limit (docs/performance.md "Scale").
ENTRYPOINT ["node", "--max-old-space-size-percentage=50", "--max-semi-space-size=1", "dist/certmgr-notify.mjs"]
CMD ["serve", "--store", "sqlite:/data/certmgr-notify.db"]
