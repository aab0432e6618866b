import type { Metadata } from "next";
import { MachinesView } from "./machines-view.tsx";

export const metadata: Metadata = { title: "Machines" };

export default function MachinesPage() {
  return <MachinesView />;
}
