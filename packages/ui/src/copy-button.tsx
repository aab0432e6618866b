"use client";
import { useEffect, useState } from "react";
import { Button } from "./button.tsx";

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // no clipboard permission (or an insecure context): the old way
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    const ok = document.execCommand("copy");
    ta.remove();
    return ok;
  }
}

/** Copies a value to the clipboard and says so (aria-live), for a few seconds. */
export function CopyButton({ value, label = "Copy" }: { value: string; label?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const t = setTimeout(() => setState("idle"), 2500);
    return () => clearTimeout(t);
  }, [state]);
  return (
    <span className="inline-flex items-center gap-2">
      <Button
        variant="secondary"
        size="sm"
        onClick={async () => setState((await copyText(value)) ? "copied" : "failed")}
      >
        {label}
      </Button>
      <span aria-live="polite" className="text-xs text-slate-600 dark:text-slate-300">
        {state === "copied" ? "Copied" : state === "failed" ? "Copy failed: select the text instead" : ""}
      </span>
    </span>
  );
}
