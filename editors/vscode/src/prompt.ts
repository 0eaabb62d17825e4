// The prompt's content blocks: the text, each @-mentioned file as a resource_link, the
// mentioned selection as an embedded resource (or quoted text when the agent does not
// take embedded context).

import type * as acp from "@agentclientprotocol/sdk/unstable";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import type { Mention } from "./messages";

export function buildPrompt(text: string, mentions: readonly Mention[], embeddedContext: boolean): acp.ContentBlock[] {
  const blocks: acp.ContentBlock[] = [{ type: "text", text }];
  const seen = new Set<string>();
  for (const mention of mentions) {
    const uri = pathToFileURL(mention.path).href;
    if (mention.kind === "file") {
      if (seen.has(uri)) continue;
      seen.add(uri);
      blocks.push({ type: "resource_link", uri, name: path.basename(mention.path) });
    } else {
      const range = `#L${mention.startLine}-${mention.endLine}`;
      if (embeddedContext) {
        blocks.push({ type: "resource", resource: { uri: uri + range, text: mention.text, mimeType: "text/plain" } });
      } else {
        blocks.push({
          type: "text",
          text: `Selection from ${mention.path} lines ${mention.startLine}-${mention.endLine}:\n\`\`\`\n${mention.text}\n\`\`\``,
        });
      }
    }
  }
  return blocks;
}
