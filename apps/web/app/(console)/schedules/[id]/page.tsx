import type { Metadata } from "next";
import { ScheduleView } from "./schedule-view.tsx";

export const metadata: Metadata = { title: "Schedule" };

export default async function SchedulePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <ScheduleView id={decodeURIComponent(id)} />;
}
