#!/bin/sh
# Installs the Go toolchain this module needs into $GO_INSTALL_DIR
# (default /usr/local/go) when no suitable one is there. The toolchain is
# fetched from the Go module proxy as the module golang.org/toolchain, the
# same archive `GOTOOLCHAIN` downloads, so a machine that reaches the
# module proxy needs nothing else.
set -eu
version=${GO_VERSION:-1.26.8}
dir=${GO_INSTALL_DIR:-/usr/local/go}
proxy=${GOPROXY_URL:-https://proxy.golang.org}

if [ -x "$dir/bin/go" ] && "$dir/bin/go" version | grep -q "go$version "; then
	exit 0
fi
case $(uname -m) in
x86_64) arch=amd64 ;;
aarch64) arch=arm64 ;;
*) echo "install-go: no toolchain for $(uname -m)" >&2; exit 1 ;;
esac
missing=
for tool in curl unzip; do
	command -v $tool >/dev/null || missing="$missing $tool"
done
if [ -n "$missing" ]; then
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends ca-certificates $missing >/dev/null
fi
mod="v0.0.1-go$version.linux-$arch"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "install-go: fetching go$version for linux/$arch from $proxy"
curl -fsSL -o "$tmp/go.zip" "$proxy/golang.org/toolchain/@v/$mod.zip"
unzip -q "$tmp/go.zip" -d "$tmp/x"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$tmp/x/golang.org/toolchain@$mod" "$dir"
# Zip archives do not keep permissions reliably: make the tools executable.
chmod -R a+rX "$dir"
find "$dir/bin" "$dir/pkg/tool" -type f -exec chmod a+x {} +
"$dir/bin/go" version
