import type { ReactNode } from "react";
import { Button } from "./button.tsx";

/** An error announced to assistive technology (role="alert"), with its code and an optional retry. */
export function ErrorBox({
  title = "Something went wrong",
  message,
  code,
  onRetry,
  children,
}: {
  title?: string;
  message: ReactNode;
  code?: string;
  onRetry?: () => void;
  children?: ReactNode;
}) {
  return (
    <div
      role="alert"
      className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100"
    >
      <p className="font-medium">
        {title}
        {code && <code className="ml-2 rounded bg-red-100 px-1 py-0.5 text-xs dark:bg-red-900">{code}</code>}
      </p>
      <p className="mt-1">{message}</p>
      {children}
      {onRetry && (
        <Button variant="secondary" size="sm" className="mt-2" onClick={onRetry}>
          Try again
        </Button>
      )}
    </div>
  );
}
