// The baseline of the open-time figure: a webview view that is a text box, set at once.
// Its status bar item says it is active (the test clicks once both extensions are).
const vscode = require("vscode");

exports.activate = (context) => {
  const status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 0);
  status.text = "minimal-webview";
  status.show();
  context.subscriptions.push(
    status,
    vscode.window.registerWebviewViewProvider("minimalWebview.view", {
      resolveWebviewView(view) {
        view.webview.options = { enableScripts: true };
        view.webview.html =
          '<!DOCTYPE html><html><body><textarea id="input" rows="3"></textarea>' +
          "<script>acquireVsCodeApi();</script></body></html>";
      },
    }),
  );
};
