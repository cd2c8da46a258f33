// A classic script: it fetches nothing.
document.documentElement.dataset.app = "1";
