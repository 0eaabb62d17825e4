// Issue 36 in a real VS Code (code-server, headless Chromium, playwright-core): the user
// reviews the agent's edits as a person does, with the mouse and the keyboard. A key in
// adkAcp.env starts the agent with a warning whose button moves it to secret storage; a
// new file is changed before it is created (Allow in the chat card); one of three hunks
// is rejected by its CodeLens (Allow in the notification); a word of a CRLF file is
// changed in the proposed side (Allow in the diff editor's title bar); a changed edit is
// rejected; Undo Last Agent Edit; the agent restarted with the key from secret storage,
// the session loaded again with "Allowed with your changes" on the replayed cards.
// Usage: node review.mjs <config.json>   (config: url, chromium, workspace, shots, report)
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(await readFile(process.argv[2], "utf8"));
const report = { steps: [], errors: [], shots: [], console: [] };
const started = Date.now();
const log = (text) => {
  const line = `[${((Date.now() - started) / 1000).toFixed(1)}s] ${text}`;
  report.steps.push(line);
  console.log(line);
};

const browser = await chromium.launch({
  executablePath: config.chromium,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
  ],
});
const context = await browser.newContext({ viewport: { width: 1500, height: 950 } });
const page = await context.newPage();
page.on("console", (m) => {
  if (m.type() === "error") report.console.push(m.text().slice(0, 300));
});

async function shot(name) {
  const path = join(config.shots, `review-${String(report.shots.length + 1).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path });
  report.shots.push(path);
}

async function step(name, run) {
  log(`step: ${name}`);
  try {
    await run();
    log(`ok: ${name}`);
  } catch (error) {
    report.errors.push(`${name}: ${String(error?.stack ?? error).slice(0, 1500)}`);
    log(`FAILED: ${name}`);
    await shot(`failed-${name.replace(/\W+/g, "-")}`).catch(() => {});
    throw error;
  }
}

const CHAT_EXTENSION = "adk-acp.adk-acp-vscode";
const chat = page
  .frameLocator(`iframe.webview.ready[src*="extensionId=${CHAT_EXTENSION}"]`)
  .frameLocator("iframe#active-frame");

async function palette(command) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 30000 });
  await input.fill(`>${command}`);
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: command.replace(/^[^:]*: /, "") }).first().waitFor({ timeout: 30000 });
  await input.press("Enter");
}

async function prompt(text) {
  const input = chat.locator("#input");
  await input.click();
  await input.fill(text);
  await input.press("Enter");
}

async function waitIdle() {
  await chat.locator("body[data-running=false]").waitFor({ timeout: 60000 });
}

/** The diff editor of this file's proposal is open; its modified (proposed) side shows `text`. */
async function proposal(tab, text) {
  await page.locator(".tab", { hasText: tab }).first().waitFor({ timeout: 60000 });
  const lines = page.locator(".monaco-diff-editor .editor.modified .view-lines");
  await lines.filter({ hasText: text }).first().waitFor({ timeout: 30000 });
  return lines.first();
}

/** Clicks the proposed side's line holding `text` (the caret goes there), as a user does. */
async function clickLine(text) {
  const line = page.locator(".monaco-diff-editor .editor.modified .view-line", { hasText: text }).first();
  await line.waitFor({ timeout: 30000 });
  await line.click();
}

async function answerCard(name) {
  const button = chat.locator(".permission:not(.answered) .options button", { hasText: new RegExp(`^${name}$`) });
  await button.first().waitFor({ timeout: 30000 });
  await button.first().click();
}

async function disk(name) {
  return readFile(join(config.workspace, name)).then((b) => b.toString("latin1"), () => null);
}

async function cards() {
  return chat.locator(".permission").evaluateAll((all) =>
    all.map((c) => `${c.id.startsWith("item-permission-") ? "replayed" : "live"} | ${c.querySelector("strong")?.textContent} | ${c.querySelector(".answer")?.textContent ?? ""}`));
}

async function scenario() {
  await step("open the workspace; the chat starts the agent, with the key in adkAcp.env", async () => {
    await page.goto(`${config.url}/?folder=${encodeURIComponent(config.workspace)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: 90000 });
    await page.locator(".statusbar-item", { hasText: "adk-acp" }).first().waitFor({ timeout: 60000 });
    await palette("adk-acp: Open Chat");
    await chat.locator('select[data-category="model"]').waitFor({ timeout: 90000 });
    const toast = page.locator(".notification-toast", { hasText: "plain-text settings" }).first();
    await toast.waitFor({ timeout: 30000 });
    report.secretWarning = await toast.innerText();
    report.settingsProblemToasts = await page.locator(".notification-toast", { hasText: "settings need a fix" }).count();
    await shot("key-in-settings");
    await toast.locator(".monaco-button", { hasText: "Move to Secret Storage" }).first().click();
    await page.locator(".notification-toast", { hasText: "moved to secret storage" }).first().waitFor({ timeout: 30000 });
    report.settingsAfterMove = JSON.parse(await readFile(join(config.workspace, ".vscode", "settings.json"), "utf8"));
  });

  await step("a new file changed before it is created; Allow in the chat card", async () => {
    await prompt("create new.py");
    await proposal("new.py (new file, proposed by the agent) — yours to change", "print('new')");
    report.newFileBeforeAllow = await disk("new.py");
    await clickLine("print('new')");
    await page.keyboard.press("Home");
    await page.keyboard.type("# reviewed\n");
    await shot("new-file-edited");
    await answerCard("Allow");
    await chat.locator(".agent", { hasText: "created it" }).waitFor({ timeout: 60000 });
    await waitIdle();
    report.newFile = await disk("new.py");
  });

  await step("one of three hunks rejected by its CodeLens; Allow in the notification", async () => {
    await prompt("change three lines");
    await proposal("three.txt ↔ proposed by the agent", "LINE 11");
    const reject = page.locator(".monaco-diff-editor .editor.modified .codelens-decoration a", { hasText: /^Reject$/ });
    await reject.nth(2).waitFor({ timeout: 30000 });
    report.lensesBefore = await page.locator(".monaco-diff-editor .editor.modified .codelens-decoration a").allInnerTexts();
    await reject.nth(1).click(); // the middle hunk (LINE 6)
    await page.locator(".monaco-diff-editor .editor.modified .view-line", { hasText: "line 6" }).first().waitFor({ timeout: 30000 });
    const lens = page.locator(".monaco-diff-editor .editor.modified .codelens-decoration a");
    await lens.nth(4).waitFor({ state: "detached", timeout: 30000 }); // two hunks left to decide
    report.lensesAfter = await lens.allInnerTexts();
    await shot("hunk-rejected");
    const toast = page.locator(".notification-toast", { hasText: "three.txt" }).first();
    await toast.waitFor({ timeout: 30000 });
    await toast.locator(".monaco-button", { hasText: /^Allow$/ }).first().click();
    await chat.locator(".agent", { hasText: "changed them" }).waitFor({ timeout: 60000 });
    await waitIdle();
    report.three = await disk("three.txt");
  });

  await step("a word changed in the proposed side of a CRLF file; Allow in the diff editor's title bar", async () => {
    await prompt("greet the world");
    await proposal("greet.py ↔ proposed by the agent", "hello world");
    await clickLine("hello world");
    await page.keyboard.press("End");
    await page.keyboard.press("ArrowLeft"); // before the closing quote
    for (let i = 0; i < "world".length; i++) await page.keyboard.press("Backspace");
    await page.keyboard.type("there");
    await page.locator(".monaco-diff-editor .editor.modified .view-line", { hasText: "hello there" }).first().waitFor({ timeout: 30000 });
    report.greetBeforeAllow = await disk("greet.py");
    await shot("word-changed");
    await page.locator('.editor-actions a.action-label[aria-label^="Allow This Edit"]').first().click();
    await chat.locator(".agent", { hasText: "greeted" }).waitFor({ timeout: 60000 });
    await waitIdle();
    report.greet = await disk("greet.py");
    report.dirtyTabs = await page.locator(".tabs-container .tab.dirty").count();
    report.reviewTabs = await page.locator(".tab", { hasText: "proposed by the agent" }).count();
  });

  await step("a changed edit rejected keeps the file", async () => {
    await prompt("bump keep.txt");
    await proposal("keep.txt ↔ proposed by the agent", "keep = 2");
    await clickLine("keep = 2");
    await page.keyboard.press("End");
    await page.keyboard.type("0");
    await answerCard("Reject");
    await chat.locator(".agent", { hasText: "left it" }).waitFor({ timeout: 60000 });
    await waitIdle();
    report.keep = await disk("keep.txt");
    report.cardsLive = await cards();
    await shot("cards-live");
  });

  await step("Undo Last Agent Edit puts back what was there before the user's version", async () => {
    await palette("adk-acp: Undo Last Agent Edit");
    await chat.locator(".notice", { hasText: "Undid the agent's edit of greet.py" }).waitFor({ timeout: 30000 });
    await page.waitForTimeout(500); // the editor's save reaches the disk
    report.greetAfterUndo = await disk("greet.py");
  });

  await step("restarted with the key from secret storage: the replayed cards say the user changed the edits", async () => {
    await palette("adk-acp: Restart Agent");
    await chat.locator(".notice", { hasText: "running again" }).first().waitFor({ timeout: 90000 });
    // The session is loaded again: its cards are the agent's replay (ids from the tool calls).
    await chat.locator('[id^="item-permission-"] .answer', { hasText: "Allowed with your changes" }).first().waitFor({ timeout: 60000 });
    report.cardsReplayed = await cards();
    await prompt("still there?");
    await chat.locator(".agent", { hasText: "still here" }).waitFor({ timeout: 60000 });
    await waitIdle();
    report.secretWarningsAfterRestart = await page.locator(".notification-toast", { hasText: "plain-text settings" }).count();
    await shot("replayed");
  });
}

try {
  await scenario();
} catch {
  // recorded in report.errors
} finally {
  report.total_ms = Date.now() - started;
  await writeFile(config.report, JSON.stringify(report, null, 1));
  await browser.close();
}
process.exit(report.errors.length ? 1 : 0);
