/**
 * Environment variables set for one test file and put back afterwards: `set` remembers each
 * variable's value the first time it touches it, `restore` puts every one back (deleting those
 * that were not set before).
 */
export function scopedEnv(): { set(vars: Record<string, string | undefined>): void; restore(): void } {
  const before = new Map<string, string | undefined>();
  return {
    set(vars) {
      for (const [k, v] of Object.entries(vars)) {
        if (!before.has(k)) before.set(k, process.env[k]);
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    },
    restore() {
      for (const [k, v] of before) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      before.clear();
    },
  };
}
