#!/usr/bin/env bash
# Installs the Debian packages the local desktop machine provider needs
# (packages/machines/src/local-desktop-provider.ts). Idempotent: checks each
# package first and installs only what is missing. Needs root (or sudo).
#
#   scripts/install-desktop-deps.sh          install what is missing
#   scripts/install-desktop-deps.sh --check  only report; exit 1 when something is missing
set -euo pipefail

PACKAGES=(
  xvfb        # Xvfb: the virtual X server, one per machine
  xauth       # per-display -auth cookie files
  openbox     # window manager
  xdotool     # mouse and keyboard input
  scrot       # screenshots (fast path)
  imagemagick # `import -window root` screenshot fallback
  chromium    # the desktop browser, driven over the DevTools protocol
  x11vnc      # VNC server for connection()
  novnc       # noVNC web client
  websockify  # websocket proxy in front of x11vnc
  curl        # file op `download` (runs as the machine's user)
  passwd      # useradd / userdel
  procps      # ps / pkill used by cleanup checks
  iptables    # owner rule keeping the desktops' DevTools ports to the service (devtools-guard.ts)
  iproute2    # ip netns / veth: each machine's own network namespace (isolation/, docs/security.md)
  tesseract-ocr # OCR fallback of the local engine (tested)
  fonts-dejavu-core # fonts for rendered test pages and the terminal
  xterm       # the desktop's terminal (ctrl+alt+t; apps, keybinds and menu: machines/desktop-apps.ts)
  pcmanfm     # the desktop's file manager (ctrl+alt+f, super+e); optional: reported by health when missing
  mousepad    # the desktop's text editor (ctrl+alt+e); optional: reported by health when missing
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "desktop deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "desktop deps: missing: ${missing[*]}"
if [[ "${1:-}" == "--check" ]]; then
  exit 1
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
  SUDO="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when they are absent or older than a day.
if [[ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -mtime -1 2>/dev/null | head -n1)" ]]; then
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update
fi
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}"
echo "desktop deps: installed ${missing[*]}"
