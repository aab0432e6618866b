// Model ids the built-in engines report in predictions and usage; pricing (packages/core) prices them.

/** Model id the built-in managed engine reports (local OCR + instruction interpreter). */
export const MANAGED_MODEL_ID = "svc-cua-local";
/** Model id the deterministic sandbox engine reports (test keys). */
export const SANDBOX_MODEL_ID = "svc-sandbox";
