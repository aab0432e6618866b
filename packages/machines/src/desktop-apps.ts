// What a managed desktop offers (issue 15): its programs, how each opens (openbox keybind, root menu),
// and the rest of the machine. ONE constant: the provider's openbox config (keybinds and root menu) is
// generated from it, desktop-requirements.ts checks its programs, and GET /v1/models serves it as
// `managed_machine` (packages/core/src/pricing/models.op.ts).
//
// Every command runs from openbox, which the provider starts through its spawn path for desktop programs
// (spawnDaemon as the machine's user, inside its namespaces: docs/security.md); the programs inherit that.

export interface DesktopApp {
  /** stable id: terminal, file_manager, text_editor, browser */
  id: "terminal" | "file_manager" | "text_editor" | "browser";
  /** label of its entry in the desktop's root menu */
  menu_label: string;
  /** the program (its X window class, for `xdotool search --class`) */
  program: string;
  window_class: string;
  /** Debian package */
  package: string;
  /** keyboard shortcuts, in the `keys` vocabulary of key_combo (null: none) */
  keybinds: string[][];
  /** shell command openbox runs (the browser's is the provider's own Chromium command line, see menuXml) */
  command: string | null;
}

export const DESKTOP_APPS: readonly DesktopApp[] = [
  {
    id: "terminal",
    menu_label: "Terminal",
    program: "xterm",
    window_class: "XTerm",
    package: "xterm",
    keybinds: [["ctrl", "alt", "t"]],
    // DejaVu Sans Mono (an Xft font of fonts-dejavu-core): xterm's default bitmap font is not installed
    command: `cd && exec xterm -maximized -fa "DejaVu Sans Mono" -fs 14`,
  },
  {
    id: "file_manager",
    menu_label: "File manager",
    program: "pcmanfm",
    window_class: "Pcmanfm",
    package: "pcmanfm",
    keybinds: [
      ["ctrl", "alt", "f"],
      ["super", "e"],
    ],
    command: `cd && exec pcmanfm "$HOME"`,
  },
  {
    id: "text_editor",
    menu_label: "Text editor",
    program: "mousepad",
    window_class: "Mousepad",
    package: "mousepad",
    keybinds: [["ctrl", "alt", "e"]],
    // no session bus on the machine: settings stay in memory instead of dconf
    command: "cd && GSETTINGS_BACKEND=memory exec mousepad",
  },
  {
    id: "browser",
    menu_label: "Browser",
    program: "chromium",
    window_class: "Chromium",
    package: "chromium",
    keybinds: [],
    command: null,
  },
];

/**
 * Chromium enterprise policies for the managed desktops (issue 15): nothing of the browser's own may
 * cover a page an agent works on. The "Save password?" bubble after a login form (it offers its own
 * Save button and Username field: an agent once clicked it instead of the form's), the address and
 * card autofill bubbles, translation and notification prompts, sign-in and promotional tabs. Chromium
 * on Linux reads these from /etc/chromium/policies/managed/*.json; the provider writes them there
 * (LocalDesktopProviderOptions.chromiumPolicyFile) before it starts a browser.
 */
export const CHROMIUM_POLICIES = {
  PasswordManagerEnabled: false,
  PasswordLeakDetectionEnabled: false,
  ImportSavedPasswords: false,
  AutofillAddressEnabled: false,
  AutofillCreditCardEnabled: false,
  TranslateEnabled: false,
  DefaultNotificationsSetting: 2,
  DefaultGeolocationSetting: 2,
  DefaultBrowserSettingEnabled: false,
  PromotionalTabsEnabled: false,
  BrowserSignin: 0,
  SyncDisabled: true,
  MetricsReportingEnabled: false,
  PrivacySandboxPromptEnabled: false,
  FeedbackSurveysEnabled: false,
} as const;

/** The root menu: right-click on the desktop background, or this keybind. */
export const DESKTOP_MENU_KEYBIND = ["ctrl", "alt", "m"] as const;

/**
 * The window list (openbox's client-list-combined-menu): every window by its title; clicking one switches to
 * it. The desktop has no panel, so this is how a window hidden behind the maximised browser is reached.
 */
export const DESKTOP_WINDOWS_KEYBIND = ["ctrl", "alt", "w"] as const;

/** What GET /v1/models says a managed machine (kind managed, live: the local-desktop provider) offers. */
export const MANAGED_DESKTOP = {
  os: "Debian GNU/Linux 12 (bookworm), x86_64",
  user: "its own unprivileged user (cua-<12 hex>), home directory /home/<user>",
  display: "Xvfb, 24-bit",
  default_resolution: { width: 1280, height: 720 },
  window_manager: `openbox (no panel; focus follows the pointer; ${DESKTOP_WINDOWS_KEYBIND.join("+")} lists the windows by title, a click on one switches to it)`,
  browser:
    "Chromium, maximised at start; driven over the DevTools protocol by the browser operations; no password, autofill, translation, notification or sign-in prompts (enterprise policies)",
  menu: {
    opens_with: ["right-click on the desktop background", DESKTOP_MENU_KEYBIND.join("+")],
    entries: DESKTOP_APPS.map((a) => a.menu_label),
  },
  apps: DESKTOP_APPS.map((a) => ({
    id: a.id,
    name: a.menu_label,
    program: a.program,
    window_class: a.window_class,
    keybinds: a.keybinds.map((k) => k.join("+")),
    menu_entry: a.menu_label,
  })),
  fonts: ["DejaVu Sans, DejaVu Sans Mono, DejaVu Serif (fonts-dejavu-core)"],
};

const XDOTOOL_TO_OPENBOX: Record<string, string> = { ctrl: "C", alt: "A", shift: "S", super: "W" };

/** ["ctrl","alt","t"] -> "C-A-t" (openbox keybind syntax). */
export function openboxKey(keys: readonly string[]): string {
  return keys.map((k) => XDOTOOL_TO_OPENBOX[k] ?? k).join("-");
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** `sh -c '<command>'` for openbox's Execute (commands carry no single quote). */
function shExec(command: string): string {
  if (command.includes("'")) throw new Error("desktop command must not contain a single quote");
  return xmlEscape(`sh -c '${command}'`);
}

/** Every key the desktop binds, in openbox syntax (stock bindings of the same keys are dropped). */
export function desktopKeys(): string[] {
  return [
    ...DESKTOP_APPS.filter((a) => a.command).flatMap((a) => a.keybinds.map(openboxKey)),
    openboxKey(DESKTOP_MENU_KEYBIND),
    openboxKey(DESKTOP_WINDOWS_KEYBIND),
  ];
}

/** The openbox <keybind> elements: each app's shortcuts, and the root menu's. */
export function desktopKeybinds(): string {
  const binds = DESKTOP_APPS.flatMap((a) =>
    a.command
      ? a.keybinds.map(
          (k) =>
            `<keybind key="${openboxKey(k)}"><action name="Execute"><command>${shExec(a.command!)}</command></action></keybind>`,
        )
      : [],
  );
  binds.push(
    `<keybind key="${openboxKey(DESKTOP_MENU_KEYBIND)}"><action name="ShowMenu"><menu>root-menu</menu></action></keybind>`,
    `<keybind key="${openboxKey(DESKTOP_WINDOWS_KEYBIND)}"><action name="ShowMenu"><menu>client-list-combined-menu</menu></action></keybind>`,
  );
  return binds.join("");
}

/**
 * The root menu file. `browserCommand` is the provider's own Chromium command line (same profile and
 * DevTools port): with the browser running it opens a new window of it, else it starts it as the
 * provider would.
 */
export function desktopMenuXml(browserCommand: string[]): string {
  const items = DESKTOP_APPS.map((a) => {
    const cmd = a.command ? shExec(a.command) : xmlEscape(browserCommand.map(shellQuoteArg).join(" "));
    return `  <item label="${xmlEscape(a.menu_label)}"><action name="Execute"><command>${cmd}</command></action></item>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>
<openbox_menu xmlns="http://openbox.org/3.4/menu">
<menu id="root-menu" label="Desktop">
${items.join("\n")}
</menu>
</openbox_menu>
`;
}

/** Quoting for openbox's command parser (g_shell_parse_argv): plain words stay, others in double quotes. */
function shellQuoteArg(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `"${a.replace(/(["\\$`])/g, "\\$1")}"`;
}
