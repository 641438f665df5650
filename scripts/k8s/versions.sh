# Sourced by scripts/k8s/*: the versions and the cache every cluster script agrees on.
# 1.34: later releases are believed to default failCgroupV1 to true and to drop containerd 1.x.
K8S_VERSION="${SEGLIFT_K8S_VERSION:-v1.34.4}"
# Outside the repository, kept between runs: the built binaries and images, by version.
K8S_CACHE="${SEGLIFT_K8S_CACHE:-/var/cache/seglift/k8s}"
