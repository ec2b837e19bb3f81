// The calendar: drag a post to another day (month) or hour (week) to give it that time, or use its
// Move link, which opens a dialog with the same form. Either way the form is posted to the server,
// which schedules the post as the API's schedule operation does; without this script the Move link
// leads to the post's own "Move to…" form.
(() => {
  // The week opens at the working day, or at the hour before now in the current week, not at midnight.
  const week = document.querySelector('.week-scroll[data-start-hour]');
  const start = week && week.querySelector(`tr[data-hour="${week.dataset.startHour}"]`);
  if (start) week.scrollTop = start.offsetTop - week.querySelector('thead').offsetHeight;
})();

(() => {
  const dialog = document.getElementById('move-dialog');
  const form = document.getElementById('move-form');
  if (!dialog || !form) return;
  const problem = document.getElementById('calendar-problem');
  if (problem) problem.focus();

  const moveTo = (postId, date, time) => {
    form.action = `/posts/${encodeURIComponent(postId)}/move`;
    form.elements.date.value = date;
    form.elements.time.value = time;
  };

  // Keyboard (and pointer) path: the Move link opens the dialog, filled with the post's time.
  let opener = null;
  document.addEventListener('click', (event) => {
    const link = event.target instanceof Element ? event.target.closest('a[data-move]') : null;
    if (!link) return;
    event.preventDefault();
    opener = link;
    moveTo(link.dataset.move, link.dataset.date, link.dataset.time);
    dialog.showModal();
    form.elements.date.focus();
  });
  dialog.querySelector('[data-close-dialog]').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    if (opener) opener.focus();
  });

  // Drag and drop: a week's cell is a day and an hour (the post keeps its minutes), a month's a day
  // (the post keeps its time of day).
  let dragged = null;
  const cellOf = (target) => (target instanceof Element ? target.closest('td[data-date]') : null);
  document.addEventListener('dragstart', (event) => {
    const chip = event.target instanceof Element ? event.target.closest('a[data-movable]') : null;
    if (!chip) return;
    dragged = chip;
    chip.classList.add('dragging');
    event.dataTransfer.effectAllowed = 'move';
    event.dataTransfer.setData('text/plain', chip.dataset.postId);
  });
  document.addEventListener('dragend', () => {
    if (dragged) dragged.classList.remove('dragging');
    dragged = null;
    for (const cell of document.querySelectorAll('td.drop-target')) cell.classList.remove('drop-target');
  });
  document.addEventListener('dragover', (event) => {
    const cell = cellOf(event.target);
    if (!dragged || !cell) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'move';
    for (const other of document.querySelectorAll('td.drop-target'))
      if (other !== cell) other.classList.remove('drop-target');
    cell.classList.add('drop-target');
  });
  document.addEventListener('drop', (event) => {
    const cell = cellOf(event.target);
    if (!dragged || !cell) return;
    event.preventDefault();
    const [hours, minutes] = dragged.dataset.time.split(':');
    const date = cell.dataset.date;
    const time = cell.dataset.hour ? `${cell.dataset.hour}:${minutes}` : `${hours}:${minutes}`;
    if (date === dragged.dataset.date && time === dragged.dataset.time) return;
    moveTo(dragged.dataset.postId, date, time);
    form.requestSubmit();
  });
})();
