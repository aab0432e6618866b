import type { SelectHTMLAttributes } from "react";
import { cx, focusRing } from "./cx.ts";
import { controlClass } from "./input.tsx";

export function Select({ className, children, ...rest }: SelectHTMLAttributes<HTMLSelectElement>) {
  return (
    <select className={cx(controlClass, "pr-8", focusRing, className)} {...rest}>
      {children}
    </select>
  );
}
