# syntax=docker/dockerfile:1
#
# Trustgate container image.
#
#   docker build -t trustgate:0.1.0 .
#   docker run --rm -p 8080:8080 -e TRUSTGATE_TOKEN=change-me trustgate:0.1.0
#
# Three stages on the same base image:
#   build  - every dependency (dev included) and `npm run build` -> dist/
#   deps   - production dependencies only (`npm ci --omit=dev`), with the
#            native module (better-sqlite3) built for the image
#   final  - node, dist/, policies/, package.json, package-lock.json and the
#            production node_modules copied from `deps`; no RUN, no npm cache.
#
# The base is pinned to a patch release (the Node version the service is
# tested on); bump it deliberately.

# ---------------------------------------------------------------------------
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
# The lock file alone decides the dependency tree. No install script is
# needed to compile TypeScript (the only ones belong to optional dev tools).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---------------------------------------------------------------------------
# Production dependencies are installed in their own stage and the final
# stage copies the resulting node_modules, rather than running
# `npm ci --omit=dev` in the final stage, because:
#   - the final stage has no RUN step at all: npm's cache (~/.npm), the
#     compiler and any install leftovers never reach an image layer, with no
#     `npm cache clean` to remember;
#   - this stage depends on package.json and package-lock.json only, so it
#     stays cached across source changes and builds in parallel with `build`;
#   - the copied tree is owned by root and read-only to the runtime user.
# One production dependency has an install script: better-sqlite3, the
# session store that worker processes share (a native module). Every other
# script stays off (--ignore-scripts); `npm rebuild better-sqlite3` runs
# that one, which takes the prebuilt binary for this platform when it can
# be downloaded and otherwise compiles it (python3, make and g++, installed
# here only; the node image has the headers). What the compiler left
# besides the module itself is removed.
FROM node:20.20.2-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
RUN npm rebuild better-sqlite3 \
 && cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node . \
 && rm -rf build deps src \
 && mkdir -p build/Release \
 && mv better_sqlite3.node build/Release/ \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('SELECT 1').get()"

# ---------------------------------------------------------------------------
FROM node:20.20.2-bookworm-slim

# The image's source is where you publish it: pass it when building, e.g.
# docker build --label org.opencontainers.image.source=https://<your repository> .
LABEL org.opencontainers.image.title="trustgate" \
      org.opencontainers.image.description="Policy decision service for MCP tool calls and results: trust annotations, evidence digests, value flows, CEL policies" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"

# Beyond loopback a front without authentication does not start: the
# image reads named tokens from a secret mounted at this path (`<name>
# <token>` per line), or set TRUSTGATE_JWKS and friends and
# TRUSTGATE_TOKENS_FILE= (docs/operations/authentication.md).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    TRUSTGATE_POLICY_DIR=/app/policies \
    TRUSTGATE_TOKENS_FILE=/run/secrets/trustgate-tokens

WORKDIR /app

# package.json is needed at run time: it marks dist/*.js as ES modules.
COPY package.json package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY policies ./policies

# The `node` user of the official image (uid 1000, gid 1000).
USER 1000:1000

EXPOSE 8080

# No curl in the image: node's fetch asks /readyz on the port in PORT.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# Exec form: node is PID 1 and receives SIGTERM itself (no npm, no shell;
# the base image's docker-entrypoint.sh execs it); it stops accepting,
# finishes in-flight requests and exits 0. SIGHUP reloads the policies.
STOPSIGNAL SIGTERM
CMD ["node", "dist/server.js"]
