// Deskpilot appliance: a browser that starts straight into a page, with no first-run tabs,
// no update, telemetry or crash-report prompts (the enterprise policy in /etc/firefox/policies does most of it;
// these are the preferences a policy cannot set).
pref("datareporting.policy.firstRunURL", "");
pref("datareporting.policy.dataSubmissionEnabled", false);
pref("datareporting.healthreport.uploadEnabled", false);
pref("toolkit.telemetry.reportingpolicy.firstRun", false);
pref("browser.startup.firstrunSkipsHomepage", true);
pref("browser.shell.checkDefaultBrowser", false);
pref("browser.crashReports.unsubmittedCheck.autoSubmit2", false);
pref("app.update.enabled", false);
pref("app.normandy.enabled", false);
pref("extensions.update.enabled", false);
pref("browser.translations.automaticallyPopup", false);
// A steady caret and no cosmetic animations: frames of an unchanged page are identical, so a settled screen
// (and "nothing changed") can be told from a blink or a transition (docs/design.md, "Settling").
pref("ui.caretBlinkTime", 0);
pref("ui.prefersReducedMotion", 1);
pref("toolkit.cosmeticAnimations.enabled", false);
// Classic scrollbars: GTK's overlay scrollbar appears on load, scroll or zoom and fades 1.5 s later, a drawing
// no action asked for.
pref("widget.gtk.overlay-scrollbars.enabled", false);
