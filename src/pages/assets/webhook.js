// A webhook endpoint's page keeps its recent deliveries up to date: every few seconds it asks the
// server for the list again (an HTML fragment the page itself is built with) and puts it in place of
// the one shown when its version changed. Without this script the page shows the deliveries as they
// were when it was loaded, and a reload shows more.
(() => {
  const section = document.getElementById('deliveries-section');
  if (!section) return;
  const url = `/settings/webhooks/${encodeURIComponent(section.dataset.endpointId)}/deliveries`;
  const startedAt = performance.now();
  const announcer = document.getElementById('deliveries-updated');
  const anyPending = () =>
    [...section.querySelectorAll('.outcome')].some((cell) => cell.textContent.startsWith('Pending'));
  const check = async () => {
    // Fifteen minutes at most: a page left open does not ask forever.
    if (performance.now() - startedAt > 900_000) return;
    const shown = document.getElementById('delivery-list');
    // Not while the reader is on one of its buttons, which would be taken from under them.
    if (document.visibilityState === 'visible' && shown && !section.contains(document.activeElement)) {
      try {
        const response = await fetch(url, { headers: { Accept: 'text/html' } });
        if (response.ok) {
          const fresh = new DOMParser()
            .parseFromString(await response.text(), 'text/html')
            .getElementById('delivery-list');
          if (fresh && fresh.dataset.version !== shown.dataset.version) {
            shown.replaceWith(document.adoptNode(fresh));
            const outcomes = [...fresh.querySelectorAll('.outcome')].map((cell) => cell.textContent.split(',')[0]);
            const count = (word) => outcomes.filter((outcome) => outcome.startsWith(word)).length;
            announcer.textContent =
              `Deliveries updated: ${count('Delivered')} delivered, ${count('Pending')} pending, ` +
              `${count('Failed')} failed.`;
          }
        }
      } catch {
        // A network hiccup: try again at the next tick.
      }
    }
    setTimeout(check, anyPending() ? 2000 : 5000);
  };
  setTimeout(check, 2000);
})();
