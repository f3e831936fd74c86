# syntax=docker/dockerfile:1
# voyage-connect as a container: built with the dev dependencies, run on a production install
# without them and without the embedded PostgreSQL (give it DATABASE_URL). docs/deployment.md
# says how to run it; test/e2e/service/deployment.test.ts runs these steps, so keep to COPY, RUN,
# WORKDIR, ENV, USER, EXPOSE, HEALTHCHECK and CMD.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's preinstall check of the Node version.
COPY scripts/check-node.mjs ./scripts/
# No optional dependencies: the build needs no PostgreSQL.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=optional
COPY tsconfig.json tsconfig.build.json tsconfig.migrations.json nest-cli.json ./
COPY src ./src
COPY migrations ./migrations
COPY scripts/build.mjs ./scripts/
# dist/ holds the service, the CLI and the compiled migrations (dist/migrations/), which the
# service applies at start.
RUN npm run build

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/check-node.mjs ./scripts/
# argon2 installs a prebuilt binary: no compiler is needed.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --omit=optional
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
# Liveness only (the process answers); /health, which also asks PostgreSQL, is for readiness.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT ?? 3000}/health/live`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
