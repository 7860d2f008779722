# timewheel's container image: compiled JavaScript (dist/) and the runtime packages only, on Node 24,
# run as the unprivileged `node` user. Three stages: build (every package; src/ and web/ → dist/), runtime
# packages (`npm ci --omit=dev` from the lockfile, as docs/operations.md "Production install"), and the image.
# docker-compose.yml runs three of these on one PostgreSQL; without DATABASE_URL a container runs an
# embedded PostgreSQL in its DATA_DIR volume instead.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# no install scripts: the build needs TypeScript and esbuild (whose binary is a package of its own),
# not the Node 24 binary or the PostgreSQL binaries
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY web ./web
COPY src ./src
# what `npm run build` runs: tsc (src/ → dist/), then the dashboard's bundle (web/ → dist/dashboard/)
RUN node scripts/build.ts

FROM node:24-bookworm-slim AS runtime-packages
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim
# MALLOC_ARENA_MAX and the node flags of CMD: what `npm start` runs (package.json "start"; docs/operations.md, "Production install")
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOST=0.0.0.0 \
    PORT=8443 \
    OPS_PORT=9464 \
    DATA_DIR=/var/lib/timewheel
WORKDIR /app
# package.json says "type": "module", which makes dist/*.js ES modules
COPY --from=runtime-packages /app/package.json ./
COPY --from=runtime-packages /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /var/lib/timewheel && chown node:node /var/lib/timewheel
USER node
VOLUME /var/lib/timewheel
# 8443: the HTTPS API; 9464: the operators' plain-HTTP listener (bound to the container's loopback
# unless OPS_HOST=0.0.0.0), whose GET /readyz is the health check (with OPS_PORT=off there is no
# such listener: replace the HEALTHCHECK)
EXPOSE 8443 9464
HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "require('node:http').get({host:'127.0.0.1',port:process.env.OPS_PORT,path:'/readyz'},(r)=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))"]
# SIGTERM (docker stop) drains: give it DRAIN_TIMEOUT_SECONDS (30 s by default) plus a margin,
# e.g. `docker stop -t 45` or compose's stop_grace_period
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=8", "--heap-growing-percent=50", "dist/main.js"]
