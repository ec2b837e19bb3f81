// A post's page follows a post that is due now (the server, on its clock, marks it `data-follow`):
// while it is on its way to the network the page asks for its status every two seconds, and shows the
// page again once the status changes (with the link to the published post, or the error).
(() => {
  const status = document.querySelector('[data-post-status]');
  if (!status || status.dataset.follow !== 'true') return;
  const current = status.dataset.postStatus;
  const startedAt = performance.now();
  const check = async () => {
    // Ten minutes at most: a post that takes longer is shown as it is, and a reload shows more.
    if (performance.now() - startedAt > 600_000) return;
    try {
      const response = await fetch(`/posts/${encodeURIComponent(status.dataset.postId)}/status`, {
        headers: { Accept: 'application/json' },
      });
      if (response.ok) {
        const { status: now } = await response.json();
        if (now !== current) {
          location.reload();
          return;
        }
      }
    } catch {
      // A network hiccup: try again at the next tick.
    }
    setTimeout(check, 2000);
  };
  setTimeout(check, 1000);
})();
