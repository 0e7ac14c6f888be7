"""The browser tests' driver: Debian's headless Chromium through Selenium, steered by the Swift
test over standard input and output, one JSON request and one JSON answer per line.

Requests: {"cmd": "open", "url": U} (a new tab; answers its number), {"cmd": "js", "page": N,
"script": S} (answers what S returns), {"cmd": "click", "page": N, "css": C} (a real click through
WebDriver), {"cmd": "wait", "page": N, "script": S, "timeout": T} (polls S every 5 ms until it is
truthy; answers the seconds waited, or an error), {"cmd": "size", "width": W, "height": H},
{"cmd": "screenshot", "page": N, "path": P}, {"cmd": "quit"}.

With LIVEMIC_BROWSER_IDLE=1 the driver, chromedriver and Chromium run under SCHED_IDLE (inherited
by every process they start): the browser stands for a phone, whose CPU is its own, and takes
only the time the rig's machine leaves over.
"""
import json
import os
import sys
import time

if os.environ.get("LIVEMIC_BROWSER_IDLE") == "1":
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1024,768", "--disable-background-timer-throttling",
                 "--disable-renderer-backgrounding", "--disable-backgrounding-occluded-windows",
                 "--no-first-run", "--disable-extensions"]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
pages = []


def on(page):
    handle = pages[page]
    if driver.current_window_handle != handle:
        driver.switch_to.window(handle)


def run(request):
    cmd = request["cmd"]
    if cmd == "open":
        if pages:
            driver.switch_to.new_window("tab")
        driver.get(request["url"])
        pages.append(driver.current_window_handle)
        return len(pages) - 1
    if cmd == "js":
        on(request["page"])
        return driver.execute_script(request["script"])
    if cmd == "click":
        on(request["page"])
        driver.find_element(By.CSS_SELECTOR, request["css"]).click()
        return time.time()
    if cmd == "wait":
        on(request["page"])
        start = time.monotonic()
        while True:
            value = driver.execute_script(request["script"])
            if value:
                return time.monotonic() - start
            if time.monotonic() - start > request.get("timeout", 10):
                raise TimeoutError("still false after %s s: %s" % (request.get("timeout", 10), request["script"]))
            time.sleep(0.005)
    if cmd == "size":
        driver.set_window_size(request["width"], request["height"])
        return True
    if cmd == "screenshot":
        on(request["page"])
        return driver.save_screenshot(request["path"])
    if cmd == "quit":
        driver.quit()
        return True
    raise ValueError("unknown request " + cmd)


print(json.dumps({"ok": True, "result": "ready"}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    try:
        answer = {"ok": True, "result": run(request)}
    except Exception as error:  # one line back, whatever went wrong
        answer = {"ok": False, "error": "%s: %s" % (type(error).__name__, str(error).splitlines()[0] if str(error) else "")}
    print(json.dumps(answer), flush=True)
    if request["cmd"] == "quit":
        break
