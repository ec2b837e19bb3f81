import { EMBEDDED_TEMPLATE_PATH, writeEmbeddedTemplate } from '../db/embedded-template.js';

// The build's step that makes the embedded database's template (scripts/build.sh): run from its bundle.
await writeEmbeddedTemplate();
console.error(`Made the embedded database's template: ${EMBEDDED_TEMPLATE_PATH}`);
