// One turn of a test client on an SDK `ActiveSession` (v1 or the experimental v2): the
// prompt, the session's updates up to its stop, the agent's text. The stop reason (v1:
// the prompt's answer; v2: the idle state update) and the text go to `report`.
export async function turn(session, text, report) {
  const answered = session.prompt(text);
  let said = "";
  let stop;
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") { stop = message; break; }
    const update = message.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      said += update.content.text;
    }
  }
  const response = await answered;
  report.stops.push(response.stopReason ?? stop.stopReason);
  report.texts.push(said);
  return response;
}

// A permission request answered by a client that allows once.
export function allowOnce(params) {
  const allow = params.options.find((o) => o.kind === "allow_once");
  return { outcome: { outcome: "selected", optionId: allow.optionId } };
}
