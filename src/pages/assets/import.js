// The import page reads a chosen CSV file into the form's text box, so a person need not paste it;
// without a script the box is pasted into, and the file picker stays hidden.
(() => {
  const input = document.querySelector('[data-import-file]');
  const label = document.querySelector('[data-import-file-label]');
  const text = document.getElementById('import-csv');
  if (!input || !label || !text) return;
  input.hidden = false;
  label.hidden = false;
  input.addEventListener('change', async () => {
    const file = input.files && input.files[0];
    if (file) text.value = await file.text();
  });
})();
