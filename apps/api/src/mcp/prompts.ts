// The two prompts of the MCP server (DECISIONS "Compatibility amendments", bullet "MCP server"):
// `automate_desktop_task {task, machine_id?}` and `schedule_recurring_task {task, frequency, timezone?}`.
// Each returns one user message that walks the model through the tools that do the job.
import type { GetPromptResult, Prompt } from "@modelcontextprotocol/sdk/types.js";

export interface McpPrompt {
  listing: Prompt;
  render(args: Record<string, string | undefined>): GetPromptResult;
}

const FREQUENCIES =
  "every_15_minutes, every_30_minutes, hourly, every_6_hours, every_12_hours, daily, weekly, monthly, or custom (with a cron expression)";

export const PROMPTS: readonly McpPrompt[] = [
  {
    listing: {
      name: "automate_desktop_task",
      title: "Automate a desktop task",
      description: "Carry out a task on a cloud desktop machine: screenshot, decide, act, verify.",
      arguments: [
        { name: "task", description: "what to do, in plain words", required: true },
        { name: "machine_id", description: "a machine to use (else create one)", required: false },
      ],
    },
    render: ({ task, machine_id }) => ({
      description: "Carry out a task on a desktop machine",
      messages: [
        {
          role: "user",
          content: {
            type: "text",
            text: [
              `Carry out this task on a desktop machine of the Service: ${task ?? ""}`,
              "",
              machine_id
                ? `1. Use machine ${machine_id}: call get_machine and, if it is stopped, start_machine.`
                : "1. Call create_machine (a test key gives an instant mock machine; a live key a real Linux desktop: poll get_machine until status is running).",
              "2. Call get_screenshot to see the screen.",
              "3. Decide the next step from the screenshot. You may call predict with the screenshot (base64) and the task to get the next action with coordinates, or ground to find an element.",
              "4. Do it with run_action (click, type, key_press, scroll, drag...), run_actions_batch for several steps, browser_op for the browser, terminal_exec for a shell command, or file_op for files. Action answers include a fresh screenshot.",
              "5. Repeat 3 and 4 until the task is done, then take a last screenshot to check the result and report what you did.",
              machine_id
                ? "6. Leave the machine as you found it (stop_machine only if you started it)."
                : "6. Call terminate_machine when you are done: machines are billed per minute while they exist.",
              "If a tool answers an error (isError), read its `error.code` and `error.suggestion` before you retry.",
            ].join("\n"),
          },
        },
      ],
    }),
  },
  {
    listing: {
      name: "schedule_recurring_task",
      title: "Schedule a recurring task",
      description: "Create a schedule that runs an agent task repeatedly.",
      arguments: [
        { name: "task", description: "what each run should do", required: true },
        { name: "frequency", description: `how often: ${FREQUENCIES}`, required: true },
        { name: "timezone", description: "IANA time zone for the schedule (default UTC)", required: false },
      ],
    },
    render: ({ task, frequency, timezone }) => ({
      description: "Schedule a recurring agent task",
      messages: [
        {
          role: "user",
          content: {
            type: "text",
            text: [
              `Schedule this task to run ${frequency ?? ""}${timezone ? ` in the ${timezone} time zone` : ""}: ${task ?? ""}`,
              "",
              "1. Pick a machine for the runs with list_machines (or create_machine).",
              `2. Call create_schedule with name, task_prompt (the task), machine_id and frequency (one of ${FREQUENCIES}); add time (HH:MM), day_of_week (0 = Sunday) or day_of_month where the frequency uses them, and timezone${timezone ? ` "${timezone}"` : " (default UTC)"}.`,
              "3. Confirm with list_schedules and report the schedule id and its next_run_at.",
              "4. Offer run_schedule_now for a first run; pause_schedule and resume_schedule control it later.",
              "If a tool answers an error (isError), read its `error.code` and `error.suggestion` before you retry.",
            ].join("\n"),
          },
        },
      ],
    }),
  },
];
