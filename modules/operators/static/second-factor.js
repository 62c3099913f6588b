// Passkey forms (data-passkey="register" or "authenticate"): on submit, ask the browser's WebAuthn API
// with the options the server rendered (data-options), put its answer in the form's `response` field
// and submit. @simplewebauthn/browser (webauthn.js, served from node_modules) does the encoding.
(() => {
  const webauthn = window.SimpleWebAuthnBrowser;
  for (const form of document.querySelectorAll("form[data-passkey]")) {
    const status = form.querySelector("[data-passkey-status]");
    const say = (text) => {
      if (status) status.textContent = text;
    };
    if (!webauthn?.browserSupportsWebAuthn()) {
      say("This browser cannot use passkeys here.");
      continue;
    }
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = form.querySelector("[data-passkey-start]");
      if (button) button.disabled = true;
      say("Waiting for your passkey or security key…");
      try {
        const optionsJSON = JSON.parse(form.dataset.options);
        const answer =
          form.dataset.passkey === "register"
            ? await webauthn.startRegistration({ optionsJSON })
            : await webauthn.startAuthentication({ optionsJSON });
        form.querySelector('input[name="response"]').value = JSON.stringify(answer);
        form.submit(); // a programmatic submit fires no submit event: no loop
      } catch (error) {
        say(`The passkey did not answer (${error?.name || "error"}). Reload and try again.`);
        if (button) button.disabled = false;
      }
    });
  }
})();
