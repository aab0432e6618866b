import type { ReactNode } from "react";
import { ConsoleFrame } from "./console-frame.tsx";

export default function ConsoleLayout({ children }: { children: ReactNode }) {
  return <ConsoleFrame>{children}</ConsoleFrame>;
}
