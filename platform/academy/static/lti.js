// The deep-linking answer goes back to the LMS by itself (the button stays for browsers without scripts).
"use strict";
document.querySelectorAll("form[data-auto-submit]").forEach((form) => form.submit());
