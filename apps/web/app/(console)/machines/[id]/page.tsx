import type { Metadata } from "next";
import { MachineView } from "./machine-view.tsx";

export const metadata: Metadata = { title: "Machine" };

export default async function MachinePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <MachineView id={decodeURIComponent(id)} />;
}
