// Deskpilot appliance: Thunderbird opens its main window without the account wizard, start page,
// default-client question, update checks or telemetry. An agent (or a human) sets up accounts itself.
pref("mail.provider.suppress_dialog_on_startup", true);
pref("mail.shell.checkDefaultClient", false);
pref("mailnews.start_page.enabled", false);
pref("mail.rights.version", 1);
pref("mail.ui.show.migration.on.upgrade", false);
pref("app.update.enabled", false);
pref("app.update.auto", false);
pref("datareporting.policy.dataSubmissionEnabled", false);
pref("datareporting.healthreport.uploadEnabled", false);
pref("toolkit.telemetry.enabled", false);
pref("toolkit.telemetry.reportingpolicy.firstRun", false);
pref("extensions.update.enabled", false);
pref("browser.crashReports.unsubmittedCheck.autoSubmit2", false);
// A steady caret and no cosmetic animations (docs/design.md, "Settling"), as in the browser.
pref("ui.caretBlinkTime", 0);
pref("ui.prefersReducedMotion", 1);
pref("toolkit.cosmeticAnimations.enabled", false);
pref("widget.gtk.overlay-scrollbars.enabled", false);
