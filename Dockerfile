# The service image: Node 24.21.0 (the version pinned in package.json devDependencies), the
# production dependencies and the TypeScript sources, which Node 24 runs directly (type
# stripping: no build step). Built and run with Docker 20.10 / BuildKit on a machine without a
# registry, on a stand-in base (docs/runbook.md, "Building the image on a machine without a
# registry"). No `# syntax=` line: it makes BuildKit pull docker/dockerfile from Docker Hub,
# and the built-in frontend already has `RUN --mount` (decision 0104).

ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# 1. Production dependencies only: `npm ci --omit=dev` leaves out vitest, typescript and the
#    pinned node/deno binaries (the base image is the pinned Node). Behind a TLS-inspecting
#    proxy, pass its CA as a build secret (`--secret id=npm_ca,src=proxy-ca.crt`): it is trusted
#    for this step only and stored in no layer. Source maps and type declarations are dropped:
#    nothing reads them at run time (no --enable-source-maps): 143 MB of dependencies become 80.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The empty package that package.json's overrides put in @scarf/scarf's place (issue 29).
COPY overrides ./overrides
RUN --mount=type=cache,target=/root/.npm \
    --mount=type=secret,id=npm_ca \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund && \
    find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete

# 2. The runtime: sources and dependencies owned by root, read-only to the service user.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SVC_LOG_FORMAT=json \
    SVC_DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/overrides ./overrides
COPY package.json ./
COPY schema ./schema
COPY src ./src
COPY cluster ./cluster
COPY sandbox ./sandbox
COPY migrations ./migrations
# The embedded database's directory (only used without DATABASE_URL): the service user's alone
# (0700; the service also tightens it at start, decision 0105). NODE_ENV=production makes every
# start production-shaped: SVC_SECRETS_KEY is required and SVC_PROVIDERS defaults to live.
RUN install -d -m 0700 -o node -g node /data
# The official image's unprivileged user (uid 1000).
USER node
EXPOSE 8080 34431
# `node` directly, PID 1 receives SIGTERM and drains (npm would not pass it on). Liveness probe
# without curl: Node's fetch.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "src/main/node.ts"]
