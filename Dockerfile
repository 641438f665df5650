# syntax=docker/dockerfile:1
# seglift image: the CLI (`seglift`), the queue worker (`seglift-worker`) and the watcher
# (`seglift-watcher`). Build: docker build -t seglift .
# Run:   docker run --rm -v /data/kafka:/data seglift inspect /data/t-0/00000000000000000000.log
#        docker run --rm seglift seglift-worker      (first argument selects the program)

ARG NODE_IMAGE=node:22-bookworm-slim

# ---- build: full workspace, dev dependencies, native codec modules --------------------------
FROM ${NODE_IMAGE} AS build
# zstd-napi compiles with node-gyp; the other codec modules and koffi (the log dir lock's fcntl)
# ship prebuilt binaries.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
RUN npm install -g pnpm@10.34.9
ENV CI=true TURBO_TELEMETRY_DISABLED=1
WORKDIR /src

# Lockfile first: the package download layer is reused until the lockfile changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN pnpm fetch --frozen-lockfile

COPY . .
RUN pnpm install --frozen-lockfile --offline \
 && pnpm build

# One self-contained directory per program: its dist, its production dependencies and copies
# of the workspace packages it uses. --legacy: the workspace does not inject workspace packages.
RUN pnpm --filter=@seglift/cli --prod deploy --legacy /out/cli \
 && pnpm --filter=@seglift/worker --prod deploy --legacy /out/worker \
 && pnpm --filter=@seglift/watcher --prod deploy --legacy /out/watcher \
 && test -x /out/cli/dist/seglift \
 && test -x /out/worker/dist/seglift-worker \
 && test -x /out/watcher/dist/seglift-watcher \
 && /out/cli/dist/seglift --version \
 && cd /out/cli && node --input-type=module -e "await import('@seglift/format')" \
 && cd /out/worker && node --input-type=module -e "await import('@seglift/format')" \
 && for app in cli worker; do (cd /out/$app && node --input-type=module -e \
      "const s = await import('@seglift/segment'); s.logDirLockHolder('/tmp')") || exit 1; done

# ---- runtime: production dependencies and dist only, non-root, read-only root friendly --------
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1 forwards SIGTERM to node and reaps children; Kubernetes sends SIGTERM on drain.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 seglift \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin seglift

# Owned by root and not writable by the seglift user: the program never writes under /app.
COPY --from=build /out/cli /app/cli
COPY --from=build /out/worker /app/worker
COPY --from=build /out/watcher /app/watcher
COPY --chmod=0755 deploy/docker/entrypoint.sh /usr/local/bin/seglift
RUN ln -s seglift /usr/local/bin/seglift-worker \
 && ln -s seglift /usr/local/bin/seglift-watcher

# Nothing is written outside mounted volumes and /tmp (an emptyDir under Kubernetes).
# The config file is named by SEGLIFT_CONFIG where one is mounted (the Kubernetes manifests do).
# The entrypoint runs each program's launcher (dist/<program>), which sets node's environment
# and flags (MALLOC_ARENA_MAX among them) from PIPELINE_NODE: nothing to repeat here.
ENV NODE_ENV=production \
    HOME=/tmp
WORKDIR /tmp
USER 10001:10001
EXPOSE 9464
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/seglift"]
CMD ["--help"]
