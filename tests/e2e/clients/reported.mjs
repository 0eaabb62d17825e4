// The end of a client script: run its body, keep an error in `report.error`, close the
// agent's stdin and wait for it to exit (at most 5 s; `child` null: a remote agent, not
// ours to stop), write the report, exit 0.
import { writeFile } from "node:fs/promises";

export async function runReported(child, report, reportPath, body) {
  try {
    await body();
  } catch (error) {
    report.error = String(error?.stack ?? error);
  }
  if (child !== null) {
    child.stdin.end();
    await new Promise((resolve) => { child.on("exit", resolve); setTimeout(resolve, 5000); });
  }
  await writeFile(reportPath, JSON.stringify(report, null, 1));
  process.exit(0);
}
