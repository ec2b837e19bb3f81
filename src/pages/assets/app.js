// Copy buttons: a button with data-copy="<input id>" copies that input's value.
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null;
  if (!button) return;
  const input = document.getElementById(button.getAttribute('data-copy'));
  if (!input) return;
  input.select();
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    // Without clipboard access (an insecure origin, a denied permission) the text stays selected for Ctrl+C.
    document.execCommand('copy');
  }
  const label = button.textContent;
  button.textContent = 'Copied';
  setTimeout(() => {
    button.textContent = label;
  }, 2000);
});

// Times are shown in the browser's time zone: a page that does not know it yet (it shows UTC) asks
// for itself again with the zone, which the server then keeps in a cookie.
(() => {
  if (!document.documentElement.hasAttribute('data-time-zone-unset')) return;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const url = new URL(location.href);
  if (!zone || zone === 'UTC' || url.searchParams.has('tz')) return;
  url.searchParams.set('tz', zone);
  location.replace(url.href);
})();
