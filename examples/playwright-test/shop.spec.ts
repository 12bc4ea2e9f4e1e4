import { expect, test } from 'cloudbrowser/playwright-test';

const shop = () => process.env.EXAMPLE_SHOP_URL ?? '';

test('the shop has a title', async ({ page }) => {
  await page.goto(shop());
  await expect(page).toHaveTitle('Tiny Shop');
});

test('the cart counts an added item', async ({ page }) => {
  await page.goto(`${shop()}/cart`);
  await page.getByRole('button', { name: 'Add' }).click();
  await expect(page.locator('#count')).toHaveText('1 item');
});

test('the report names the cloud browser of the test', async ({ page, cloudBrowserHandle }, testInfo) => {
  await page.goto(shop());
  expect(testInfo.annotations).toContainEqual({
    type: 'cloudbrowser.browserId',
    description: cloudBrowserHandle.id,
  });
});

// INTENTIONALLY FAILING: this test exists to show that a failed test still stops its cloud browser.
test('INTENTIONALLY FAILING: expects a title the shop does not have', async ({ page }) => {
  await page.goto(shop());
  await expect(page).toHaveTitle('A title the shop does not have', { timeout: 1_000 });
});
